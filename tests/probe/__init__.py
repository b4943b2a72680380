"""Tests of the disruption probe (``l3ha.probe`` and ``l3ha probe``)."""
