"""The compat tests run RAGAS users' code against the scripted OpenAI-compatible judge server of the API
endpoint tests (statements = the answer's sentences; supported = the claim occurs in the context;
embeddings = hashed trigrams), on 127.0.0.1."""

import warnings

import pytest

from tests.test_api_endpoints import server  # noqa: F401  (the scripted judge server fixture, reused)

pytest.importorskip("ragas", reason="the RAGAS compat layer is tested with ragas==0.4.3 installed")


@pytest.fixture(autouse=True)
def _quiet_ragas_deprecations():
    """RAGAS 0.4 warns on every legacy import and wrapper; a user's script is written that way."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield
