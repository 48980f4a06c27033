"""The figures (PNG) and the HTML views: one run (run), a sweep (compare, layer_figures,
depth_groups), the study's figures (study, convergence, escape_law, prepost_map), shared helpers (common) and the
explorable views (views).
Draws from runs or from judged studies; judges nothing of its own.
"""
