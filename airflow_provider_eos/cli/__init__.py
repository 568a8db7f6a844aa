"""The ``eos`` command line: :mod:`.main` (parser, dispatch; the ``eos`` script is ``main.main``),
:mod:`.output` (exit codes, ``--json``, errors), and one module per command group.

``python -m airflow_provider_eos.cli`` runs it too (:mod:`.__main__`).
"""
