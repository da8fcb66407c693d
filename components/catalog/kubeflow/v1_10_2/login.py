"""kubeflow/manifests v1.10.2: the login path's objects the overlay rewrites (dex, oauth2-proxy, the example Profile).

Sources (tag v1.10.2): ``common/dex/overlays/oauth2-proxy/config-map.yaml``,
``common/oauth2-proxy/base/kustomization.yaml`` (configMapGenerator ``oauth2-proxy-parameters``),
``common/user-namespace/base``; the dex config comment "YOU SHOULD NOT USE THE DEFAULT STATIC
PASSWORDS and patch /common/dex/base/dex-passwords.yaml in a Kustomize overlay or remove it".
"""

from __future__ import annotations

# The dex ConfigMap: no secret in it, the hash comes from env DEX_USER_PASSWORD (dex-passwords).
DEX_NAMESPACE = "auth"
DEX_CONFIGMAP = "dex"
DEX_CONFIG_KEY = "config.yaml"
# common/dex/overlays/oauth2-proxy/config-map.yaml data["config.yaml"] at v1.10.2 (the v1.10.0
# file differs only by one comment line). The overlay replaces the whole value (a strategic merge
# patch cannot edit inside a string), so it writes this text with the user's email/username.
# The in-cluster issuer of upstream's dex (the first line of its config).
DEX_ISSUER = "http://dex.auth.svc.cluster.local:5556/dex"
UPSTREAM_DEX_CONFIG_YAML = f"""\
issuer: {DEX_ISSUER}
storage:
  type: kubernetes
  config:
    inCluster: true
web:
  http: 0.0.0.0:5556
logger:
  level: "debug"
  format: text
oauth2:
  skipApprovalScreen: true
enablePasswordDB: true
staticPasswords:
- email: user@example.com
  hashFromEnv: DEX_USER_PASSWORD
  username: user
  userID: "15841185641784"
staticClients:
# https://github.com/dexidp/dex/pull/1664
- idEnv: OIDC_CLIENT_ID
  redirectURIs: ["/oauth2/callback"]
  name: 'Dex Login Application'
  secretEnv: OIDC_CLIENT_SECRET
"""

# oauth2-proxy parameters (configMapGenerator, hashed): FORCE_HTTPS drives --cookie-secure.
OAUTH2_PROXY_NAMESPACE = "oauth2-proxy"
OAUTH2_PROXY_PARAMETERS_CONFIGMAP = "oauth2-proxy-parameters"

# common/user-namespace/base: the example Profile and the generated ConfigMap it is filled from.
USER_PROFILE_NAME = "kubeflow-user-example-com"
USER_NAMESPACE_CONFIGMAP = "default-install-config"
