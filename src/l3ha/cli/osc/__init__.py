"""``openstack l3ha ...``: l3ha's commands as a python-openstackclient (osc-lib) plugin.

``plugin`` is the ``openstack.cli.extension`` module, ``commands`` the cliff commands
(entry points ``openstack.l3ha.v1``); each runs l3ha's own command handler with the
``openstack`` client's authenticated connection.
"""
