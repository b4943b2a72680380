"""The boundary to Neutron: the only package that imports openstacksdk and keystoneauth.

``adapter`` (``NeutronCloud``, ``connect``) and its helpers ``transport``,
``connect``, ``sdk_errors`` and ``config_problems`` import them; ``base``,
``translate`` and ``retry`` are pure.
"""
