"""Tests of the ordered VIP state monitor."""
