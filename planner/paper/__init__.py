"""A check of the io.net AIBC 2025 paper, not planning: its headline claims recomputed from its own
published runs (`check`: `paper_check`), what the check rests on (`basis`), the energy,
sweet-spot and carbon claims (`energy`), and what one fully loaded server costs per million
tokens at a measured level (`unit_costs`).
"""
