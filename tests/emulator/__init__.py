"""Tests of the Neutron API emulator."""
