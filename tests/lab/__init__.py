"""Tests of the keepalived lab (root)."""
