"""The boundary to Neutron: the only package that imports openstacksdk (in ``adapter``)."""
