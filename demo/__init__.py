"""The demonstration ``make demo`` runs (``python -m demo``), kept beside the product like ``bench/`` and ``soak/``:
it crashes a driver through the tests' fault plug-in, which a clone has and an installed package does not."""
