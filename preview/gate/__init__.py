"""The pull-request policy gate (this package): every CrossGuard policy of ``policies/`` over an offline preview.

Why: ``pulumi preview --policy-pack policies`` needs the Pulumi CLI, a backend and cloud
credentials, which a pull request from a fork (and this repository's CI) does not have. The
offline preview already records every registration with the wire-format inputs the policy
analyzer would receive, so the gate hands those to the very same policy objects, the way the
analyzer does: resource policies get each custom resource's inputs, stack policies get the whole
recorded set (a value unknown at preview raises as it does under the analyzer, see
``analyzer_props``), and each policy gets its schema defaults plus the stack's
``policies/config/<stack>.json`` (the ``--policy-pack-config`` format:
``{"all": "advisory", "<policy>": "disabled" | {"enforcementLevel": ..., "<key>": ...}}``). Policies run in
the project folder, as the program did, so a relative path in the inputs (``gpuOperator.chartPath``) reads
the same file.

Beyond the analyzer: the gate also runs every resource policy on the objects the program's Helm
releases and kustomize Directories render to (``preview/render/rendered.py``, the real ``helm template``
and ``kubectl kustomize``), each as a resource of type ``kubernetes:<group/version>:<Kind>`` with
the object as props. The CLI never sees a ``helm.v3.Release``'s objects (pulumi/pulumi#10055).
A render that fails is a finding of the gate's own check ``rendered-output`` (mandatory for a
Directory that does not build, advisory for a release of a chart with no pinned copy). Stack
policies see the registered resources only.

Output: ``policy-report.json``, a sorted list of ``{"policy", "enforcement", "resource",
"message", "origin"}`` (``origin``: ``registered``, or ``rendered from <type>::<name>`` of the
release or Directory), and a verdict table; a mandatory violation fails the preview (exit code 3).

The package's jobs, one module each: ``config`` (the policy-pack config, checked as the CLI checks it, and the
CUDA level it must share with the stack), ``analyzer`` (what the policy analyzer hands a policy: its argument
bags, the unknown-value proxy, the linked stack resources; the policy unit tests use the same), ``evaluate``
(every policy over the registrations and the rendered objects, secrets scrubbed from messages) and ``report``
(``policy-report.json`` and the verdict table).
"""
