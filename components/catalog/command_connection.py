"""What of a pulumi-command connection is secret: the credentials, not where it connects.

pulumi-command's SDK wraps a remote command's whole ``connection`` in one secret
(``pulumi_command/remote/command.py``: ``pulumi.Output.secret(connection)`` and
``additional_secret_outputs=["connection"]``, pulumi-command 1.2.1), so the engine, and an offline
preview that masks by the wire format's secret markers, sees ``[secret]`` for the host and user too:
moving the root scripts to another machine would read as no change. The program marks the
credentials secret itself (``components/bare_metal/host_preparation.py``); the review shows the
fields below in clear (``ConnectionArgs`` / ``ProxyConnectionArgs`` of the same SDK) and masks
every other field of the connection (``privateKey``, ``password``, ``privateKeyPassword``, and any
field a later SDK adds).
"""

from __future__ import annotations

from components.catalog.names import COPY_TO_REMOTE_TYPE, REMOTE_COMMAND_TYPE

#: Resource types whose ``connection`` input the SDK makes one secret.
CONNECTION_TYPES: tuple[str, ...] = (REMOTE_COMMAND_TYPE, COPY_TO_REMOTE_TYPE)
CONNECTION_INPUT = "connection"
#: The bastion's settings, nested in the connection.
PROXY_FIELD = "proxy"
#: Fields that say where and as whom the command connects: shown in clear.
CLEAR_FIELDS: tuple[str, ...] = ("host", "user", "port", "hostKey", "dialErrorLimit", "perDialTimeout")
