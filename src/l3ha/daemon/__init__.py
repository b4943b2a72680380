"""The ``l3ha watch`` daemon: watch loop, leader election, metrics, systemd notify, settings.

Each submodule's docstring says the I/O it does; importing this package does none.
"""
