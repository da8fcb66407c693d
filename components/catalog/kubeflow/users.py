"""The static dex user the overlay writes into dex's config: which emails and usernames are refused.

Why here: the config check and the overlay spec apply the same rule. The email is a login name the
API server never checks (it sits inside the dex ConfigMap's ``config.yaml`` and in Profile owners),
so the rule is ours: an email address (``catalog.kubernetes.email_problem``), and never upstream's
public default user, which everyone who has read kubeflow/manifests knows. The username is written
quoted into the same file; dex takes any string, we take a plain name so the line stays one YAML
scalar.
"""

from __future__ import annotations

import re

from components.catalog.kubeflow.v1_10_2.credentials import DEFAULT_USER_EMAIL
from components.catalog.kubeflow.v1_10_2.layout import TAG
from components.catalog.kubernetes import email_problem

_USERNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}\Z")

#: Where upstream writes the default user (kubeflow/manifests v1.10.2).
DEFAULT_USER_SOURCE = "common/dex/overlays/oauth2-proxy/config-map.yaml"


def dex_email_problem(email: str) -> str | None:
    """Why ``email`` cannot be the dex user's login, or None."""
    if email.strip().lower() == DEFAULT_USER_EMAIL:
        return (
            f"{email!r} is the public default user of kubeflow/manifests {TAG} ({DEFAULT_USER_SOURCE}): "
            "everyone who has read the repository knows the login; choose your team's own email address "
            "(gpu-platform's rule: no public default of kubeflow/manifests reaches a cluster)"
        )
    return email_problem(email)


def dex_username_problem(username: str) -> str | None:
    """Why ``username`` cannot be the dex user's display name in the generated config, or None."""
    if not _USERNAME.match(username):
        return (
            f"{username!r} must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit "
            "(gpu-platform's rule for the name it writes into dex's config.yaml)"
        )
    return None
