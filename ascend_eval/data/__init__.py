"""The data layer: load any RAG dataset format into `Sample`s and check them against the metrics.

>>> from ascend_eval.data import load_dataset, validate
>>> ds = load_dataset([{"question": "q", "answer": "a"}])
>>> validate(ds, {"answer_relevancy": ["user_input", "response"]})

Importing this package does not import pandas, pyarrow or datasets; only the loaders that need one
import it.
"""

from ascend_eval.data.loaders import load_dataset
from ascend_eval.data.sample import LEGACY_ALIASES, Column, Dataset, Sample
from ascend_eval.data.validation import UserColumn, validate

__all__ = ["LEGACY_ALIASES", "Column", "Dataset", "Sample", "UserColumn", "load_dataset", "validate"]
