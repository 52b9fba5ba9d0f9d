"""prime-rl (github.com/PrimeIntellect-ai/prime-rl, Apache-2.0, LICENSE beside this file), not on PyPI and its
trainer needs GPUs: src/prime_rl/trainer/rl/token_export.py and src/prime_rl/trainer/rl/loss.py (whose
compute_importance_ratio_and_mismatch_kl the exporter calls) copied unchanged from commit
559b44772e471d1538537b8805cc77f3824a5e64 into prime_rl/trainer/rl/ (namespace packages there, as in prime-rl), so
test_import_prime_rl.py and test_watch.py write token exports with prime-rl's TokenExporter. prime-rl has no
prime_rl/__init__.py; this one is TurnLens's."""
