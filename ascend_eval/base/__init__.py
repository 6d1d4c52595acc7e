"""The bottom layer: what every layer of the project shares and that is not about models.

The root errors (`errors.py`: `AscendEvalError`, `ConfigError`, `DataError`) and where the library keeps
its files (`paths.py`: `cache_root`, `CACHE_ENV`). It imports nothing else of the project, so that
`ascend_eval`, `models/` and `kernels/` can all import it without an import going up the layering
(`tests/test_import_graph.py`). Users import errors from `ascend_eval.errors`, which re-exports these.
"""
