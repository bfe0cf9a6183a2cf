"""opprobe: will this PyTorch model run on that XLA backend?

    import opprobe, torch
    report = opprobe.analyze(torch.nn.Linear(4, 2), (torch.randn(3, 4),), backend="rules:neuron-trn1")
    report["support_percentage"], report["unsupported_operators"]

analyze() records the aten calls of one call of the model in this process (with the same recorder as
`opprobe capture`), then runs the C++ `opprobe analyze` on them and returns its JSON report as a dict.
`python -m opprobe ARGS` runs the opprobe binary itself. find_binary() says which binary is used.
"""
from opprobe._api import analyze, record
from opprobe._locate import OpprobeError, find_binary

__version__ = "0.1.0"
__all__ = ["analyze", "record", "find_binary", "OpprobeError", "__version__"]
