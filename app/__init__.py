"""The top of Sluice: the composed config (``app.config``), the ``sluice`` command (``app.cli``) and the
commands that load it. Nothing below imports this package."""
