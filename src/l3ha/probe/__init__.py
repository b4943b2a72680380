"""The disruption probe: sample targets on a fixed grid, find outage windows, report them.

``samplers`` is the only module that touches the network; ``analysis`` and
``timeline`` are pure; ``report`` writes files; ``runner`` ties them together.
"""
