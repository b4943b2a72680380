"""Tests of the pure placement planner (l3ha.planner)."""
