"""The ``sluice`` subcommands that load the composed config and hand each component its own sections."""
