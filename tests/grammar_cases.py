"""Edge cases of every grammar a config value is checked by, each with the verdict its receiver gives.

The verdicts are the receivers', written down here from their own test tables where they have one (cited per
grammar), never computed with the catalog function under test: a test compares the catalog's verdict, and the
stack's refusal at each key that carries such a value, with these. A case is ``(value, valid)``.
"""

from __future__ import annotations

from typing import Any, Final

Case = tuple[Any, bool]

_HEX64 = "1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a"
_LONG_NAMESPACE = (
    "this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255_this_is_not_a_valid_namespace_because_its_"
    "lenth_is_greater_than_255_this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255_this_is_not_a_"
    "valid_namespace_because_its_lenth_is_greater_than_255/docker"
)

#: Image references as the kubelet parses them: github.com/distribution/reference v0.6.0 ``normalize_test.go``
#: (TestValidateReferenceName, TestValidateRemoteName: their names, given a tag here, since the platform runs no
#: untagged image), ``regexp.go`` (a tag of at most 128 characters, not starting with '.' or '-'), go-digest
#: v1.0.0 (sha256: exactly 64 lowercase hex digits), the issue's own cases; and the platform's pin rule (no tag, or
#: ``:latest``, is refused; a digest pins).
IMAGE_REFERENCES: Final[tuple[Case, ...]] = (
    ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", True),
    ("docker/docker:1.0", True),
    ("library/debian:12", True),
    ("debian:12", True),
    ("localhost/library/debian:12", True),
    ("LOCALDOMAIN/debian:12", True),
    ("index.docker.io/debian:12", True),
    ("127.0.0.1:5000/docker/docker:1.0", True),
    ("192.168.0.1:8/debian:12", True),
    ("[fc00::1]:5000/docker:1.0", True),
    ("[fc00:1:2:3:4:5:6:7]:5000/library/debian:12", True),
    (f"docker.io/{_HEX64}:1", True),
    ("docker---rules/docker:1", True),
    ("dock__er/docker:1", True),
    ("jess/t:1", True),
    ("thisisthesongthatneverendsitgoesonandonandonthisisthesongthatnev:1", True),
    ("registry.example.com/team/app:" + "a" * 128, True),
    ("registry.example.com/team/app:_x", True),
    ("ubuntu@sha256:" + "a" * 64, True),
    ("registry.example.com/team/app:1.2@sha256:" + "0" * 64, True),
    ("https://github.com/docker/docker", False),
    ("docker/Docker:1", False),
    ("-docker:1", False),
    ("docker///docker:1", False),
    ("docker.io/docker/Docker:1", False),
    ("fc00::1:5000/debian:1", False),
    ("[fe80::1%eth0]:5000/debian:1", False),
    ("[2001:db8:3:4::192.0.2.33]:5000/debian:1", False),
    (_HEX64, False),
    ("docker-/docker:1", False),
    ("____/____:1", False),
    ("dock..er/docker:1", False),
    ("docker/:1", False),
    (_LONG_NAMESPACE + ":1", False),
    ("nvcr.io/NVIDIA/cuda:12.0", False),
    ("nvcr.io/nvidia/cuda:1 2", False),
    ("nvcr.io/nvidia/cuda@sha256:abc", False),
    ("nvcr.io/nvidia/cuda:" + "a" * 129, False),
    ("nvcr.io/nvidia/cuda:1\x00", False),
    ("registry.example.com/team/app:.x", False),
    ("registry.example.com/team/app:-x", False),
    ("ubuntu@sha256:" + "A" * 64, False),
    ("ubuntu@md5:" + "a" * 32, False),
    ("", False),
    ("nvcr.io/nvidia/cuda", False),  # no tag: :latest (the platform's pin rule)
    ("debian:latest", False),  # the platform's pin rule
)

#: DNS-1123 labels (namespaces): k8s.io/apimachinery v0.32.0 ``pkg/util/validation/validation_test.go``
#: TestIsDNS1123Label.
DNS_LABELS: Final[tuple[Case, ...]] = (
    ("a", True),
    ("ab", True),
    ("abc", True),
    ("a1", True),
    ("a-1", True),
    ("a--1--2--b", True),
    ("0", True),
    ("01", True),
    ("012", True),
    ("1a", True),
    ("1-a", True),
    ("1--a--b--2", True),
    ("a" * 63, True),
    ("", False),
    ("A", False),
    ("ABC", False),
    ("aBc", False),
    ("A1", False),
    ("A-1", False),
    ("1-A", False),
    ("-", False),
    ("a-", False),
    ("-a", False),
    ("1-", False),
    ("-1", False),
    ("_", False),
    ("a_", False),
    ("_a", False),
    ("a_b", False),
    ("1_", False),
    ("_1", False),
    ("1_2", False),
    (".", False),
    ("a.", False),
    (".a", False),
    ("a.b", False),
    ("1.", False),
    (".1", False),
    ("1.2", False),
    (" ", False),
    ("a b", False),
    ("a\x00b", False),
    ("a" * 64, False),
)

#: DNS-1123 subdomains (ConfigMap, Secret, IngressClass and custom resource names): k8s.io/apimachinery v0.32.0
#: ``validation_test.go`` TestIsDNS1123Subdomain (a label may be longer than 63 there: only the whole is bounded).
DNS_SUBDOMAINS: Final[tuple[Case, ...]] = (
    ("a", True),
    ("ab", True),
    ("a1", True),
    ("a-1", True),
    ("0", True),
    ("1a", True),
    ("a.a", True),
    ("ab.ab", True),
    ("a-1.a-1", True),
    ("0.0", True),
    ("1-a.1-a", True),
    ("a.b.c.d.e", True),
    ("aa.bb.cc.dd.ee", True),
    ("1.2.3.4.5", True),
    ("11.22.33.44.55", True),
    ("a" * 253, True),
    ("", False),
    ("A", False),
    ("aBc", False),
    ("-", False),
    ("a-", False),
    ("-a", False),
    ("_", False),
    ("a_b", False),
    (".", False),
    ("a.", False),
    (".a", False),
    ("a..b", False),
    ("a.-b", False),
    ("a-.b", False),
    ("1.2.3.4.", False),
    ("a b", False),
    ("*", False),
    ("a\x00b", False),
    ("a" * 254, False),
)

#: Helm release names: helm.sh/helm/v3 v3.17.0 ``pkg/chartutil/validate_name_test.go`` (TestValidateReleaseName),
#: plus the chart's own names (gpu-operator.fullname names objects after the release, a DNS label: no dot).
HELM_RELEASE_NAMES: Final[tuple[Case, ...]] = (
    ("nina-pinta-santa-maria", True),
    ("ok", True),
    ("a", True),
    ("0", True),
    ("a" * 53, True),
    ("", False),
    ("a" * 54, False),
    ("Nina", False),
    ("nina_pinta", False),
    ("nina pinta", False),
    ("-nina", False),
    ("nina-", False),
    ("nina\x00", False),
    ("a.b", False),  # Helm's pattern allows it; the chart's object names (DNS labels) do not
)

#: Label selectors: k8s.io/apimachinery v0.32.0 ``pkg/labels/selector_test.go`` TestSelectorParse (goodStrings and
#: badStrings), and the parser's own verdicts on the rest (``Parser.parse``, ``parseValues``, ``parseExactValue``,
#: ``NewRequirement``).
LABEL_SELECTORS: Final[tuple[Case, ...]] = (
    ("x=a,y=b,z=c", True),
    ("", True),
    ("x!=a,y=b", True),
    ("x=", True),
    ("x= ", True),
    ("x=,z= ", True),
    ("x= ,z= ", True),
    ("!x", True),
    ("x>1", True),
    ("x>1,z<5", True),
    ("x in (a,b)", True),
    ("x notin (a)", True),
    ("x in ()", True),
    ("x in (a,,b)", True),
    ("x==", True),
    ("in in (in)", True),
    ("example.com/team in (ml,cv), !preemptible", True),
    ("x<05", True),
    ("x>9223372036854775807", True),
    ("x=a||y=b", False),
    ("x==a==b", False),
    ("!x=a", False),
    ("x<a", False),
    ("app in (a b)", False),
    ("app in (x", False),
    ("x,", False),
    ("a b", False),
    ("=v", False),
    ("team in (ml) extra", False),
    ("x>-5", False),
    ("x>9223372036854775808", False),
    ("a=b\x00c", False),
    ("a in x", False),
    (",", False),
    ("a/b/c=d", False),
    ("a=" + "v" * 64, False),
)

#: Prometheus durations (a rule's ``for``): github.com/prometheus/common v0.62.0 ``model/time.go`` ParseDuration
#: (``model/time_test.go`` TestParseDuration, TestParseBadDuration), and the longest time.Duration (~292 years).
PROMETHEUS_DURATIONS: Final[tuple[Case, ...]] = (
    ("0", True),
    ("0s", True),
    ("0w", True),
    ("324ms", True),
    ("3s", True),
    ("5m", True),
    ("1h", True),
    ("4d", True),
    ("4d1h", True),
    ("14d", True),
    ("3w", True),
    ("1w2d", True),
    ("10y", True),
    ("1y2w3d4h5m6s7ms", True),
    ("292y", True),
    ("106751d", True),
    ("", False),
    ("1", False),
    ("0.5m", False),
    ("1h 30m", False),
    ("30m1h", False),
    ("1hh", False),
    ("-5m", False),
    ("1ns", False),
    ("5M", False),
    ("15 minutes", False),
    ("293y", False),
    ("106752d", False),
    ("9999999999999999999y", False),
)

#: Alert thresholds written into a PromQL comparison: a comparison with NaN or an infinity never fires (PromQL);
#: negative thresholds are the platform's own refusal (every threshold counts or measures something >= 0).
ALERT_THRESHOLDS: Final[tuple[Case, ...]] = (
    (0, True),
    (0.25, True),
    (5, True),
    (1e6, True),
    (1.5e300, True),
    (float("nan"), False),
    (float("inf"), False),
    (float("-inf"), False),
    (-1, False),
)

#: The public host (Ingress rule host and URL): k8s.io/kubernetes validateIngressRules (DNS-1123 subdomain, not an
#: IP), RFC 1035 2.3.4 (labels of at most 63), a URL (no wildcard), a name with a dot.
PUBLIC_HOSTS: Final[tuple[Case, ...]] = (
    ("kubeflow.example.com", True),
    ("a.b", True),
    ("x1.example.com", True),
    ("kubeflow-1.dev.example.com", True),
    ("a" * 63 + ".example.com", True),
    ("*.example.com", False),
    ("a" * 64 + ".example.com", False),
    ("kubeflow", False),
    ("192.0.2.10", False),
    ("2001:db8::1", False),
    ("Kubeflow.example.com", False),
    ("a..b", False),
    ("-a.example.com", False),
    ("a_b.example.com", False),
    ("kubeflow.example.com.", False),
    ("", False),
)

#: ``gpuOperator.maxUnavailable`` as the operator writes it (gpu-operator v26.7.0 applyUpdateStrategyConfig:
#: ``%`` kept, else strconv.ParseInt(v, 10, 32); no maxSurge) and Kubernetes validates the DaemonSet
#: (ValidateRollingUpdateDaemonSet: not 0 with maxSurge 0; a percentage [0-9]+% up to 100%).
OPERATOR_MAX_UNAVAILABLE: Final[tuple[Case, ...]] = (
    (1, True),
    ("1", True),
    ("+1", True),
    ("01", True),
    ("25%", True),
    ("1%", True),
    ("100%", True),
    (2147483647, True),
    (0, False),
    ("0", False),
    ("00", False),
    ("-0", False),
    ("0%", False),
    ("000%", False),
    ("-1", False),
    ("101%", False),
    ("1.5", False),
    ("1.5%", False),
    ("25 %", False),
    ("x", False),
    ("2147483648", False),
)

#: Kubernetes quantities (a ResourceQuota's ``spec.hard`` values): k8s.io/apimachinery v0.32.0
#: ``pkg/api/resource/quantity.go`` ParseQuantity (``<signedNumber><suffix>``: binary Ki..Ei, decimal n u m "" k M
#: G T P E, or an exponent e/E<signedNumber>; ``quantity_test.go``), and k8s.io/kubernetes ValidateResourceQuantityValue
#: (a quota is never negative).
QUANTITIES: Final[tuple[Case, ...]] = (
    ("0", True),
    ("1", True),
    ("500m", True),
    ("16Gi", True),
    ("1.5", True),
    ("2e3", True),
    ("1E3", True),
    ("+4", True),
    (".5", True),
    ("5.", True),
    ("1Ei", True),
    ("100k", True),
    ("-1", False),
    ("abc", False),
    ("16GB", False),
    ("1.5.1", False),
    ("Ki", False),
    ("1 Gi", False),
    ("1ki", False),
    ("0x10", False),
    ("", False),
)

#: The grammars, by the name the tests use.
GRAMMARS: Final[dict[str, tuple[Case, ...]]] = {
    "image reference": IMAGE_REFERENCES,
    "DNS label": DNS_LABELS,
    "DNS subdomain": DNS_SUBDOMAINS,
    "Helm release name": HELM_RELEASE_NAMES,
    "label selector": LABEL_SELECTORS,
    "Prometheus duration": PROMETHEUS_DURATIONS,
    "alert threshold": ALERT_THRESHOLDS,
    "public host": PUBLIC_HOSTS,
    "operator maxUnavailable": OPERATOR_MAX_UNAVAILABLE,
    "Kubernetes quantity": QUANTITIES,
}
