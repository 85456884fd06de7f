"""The store's operator key: closed by default, made at first start when none is configured.

Without ``sink.admin_key`` in the config, the first process that needs it (the sink at start, or a
command opening the store) writes a random key to ``sink.admin_key_file`` with mode 0600 and logs its
path. Commands run by the same OS user (``sluice query|export|erase`` without ``--api-key``) read that
file and so act as the operator; a caller without a key, or who cannot read the file, is refused.

    cat var/admin.key    # the operator key, readable only by its owner
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from sinks.settings import SinkSettings

log = logging.getLogger("sluice.sink")


def admin_key_path(cfg: SinkSettings) -> Path:
    return cfg.path(cfg.sink.admin_key_file)


def read_admin_key(cfg: SinkSettings) -> str | None:
    """The configured operator key, else the key file's content (None if absent or unreadable)."""
    if cfg.sink.admin_key is not None:
        return cfg.sink.admin_key.get_secret_value()
    try:
        key = admin_key_path(cfg).read_text().strip()
    except OSError:
        return None
    return key or None


def ensure_admin_key(cfg: SinkSettings) -> str:
    """The operator key, creating the key file (mode 0600) when none exists yet."""
    key = read_admin_key(cfg)
    if key is not None:
        return key
    path = admin_key_path(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = "sk-sluice-admin-" + secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it meanwhile
        return read_admin_key(cfg) or key
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    log.warning("no sink.admin_key configured: made an operator key at %s (mode 0600)", path)
    return key
