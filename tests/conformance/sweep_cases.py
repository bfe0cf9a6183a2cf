# The coverage sweep's workloads (tests/conformance/sweep.py runs this under `opprobe capture`).
# Usage: PYTHON sweep_cases.py FAMILY [--list]
# Each family builds every model, module or transform of its kind at small sizes and runs it; a case that
# PyTorch itself cannot build or run with these arguments is printed as `SKIP name: why` on stderr (the
# sweep lists them) and the family goes on. Weights are random (weights=None, weights_backbone=None).
import inspect
import sys
import time

import torch

torch.manual_seed(0)
FAMILIES = {}


def family(name):
    def deco(fn):
        FAMILIES[name] = fn
        return fn
    return deco


RESULTS = {"ok": 0, "skip": 0}


def run_case(name, fn):
    t0 = time.time()
    try:
        fn()
        RESULTS["ok"] += 1
        print("CASE %s ok (%.1f s)" % (name, time.time() - t0), file=sys.stderr)
    except Exception as e:  # noqa: BLE001  PyTorch rejected the case itself: not opprobe's business
        RESULTS["skip"] += 1
        msg = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:200]
        print("SKIP %s: %s" % (name, msg), file=sys.stderr)


def backward_of(out):
    tensors = []
    def walk(o):
        if isinstance(o, torch.Tensor):
            if o.requires_grad and (o.is_floating_point() or o.is_complex()):
                tensors.append(o)
        elif isinstance(o, (list, tuple)):
            for x in o:
                walk(x)
        elif isinstance(o, dict):
            for x in o.values():
                walk(x)
    walk(out)
    if tensors:
        loss = sum(t.abs().sum() if t.is_complex() else t.sum() for t in tensors)
        loss.backward()


# ---------------------------------------------------------------------------------------------- torch.nn
def f(*shape, **kw):
    return torch.randn(*shape, **kw)


def nn_cases():
    nn = torch.nn
    x4 = lambda: (f(2, 3, 8, 8),)
    x3 = lambda: (f(2, 3, 8),)
    x5 = lambda: (f(2, 3, 4, 6, 6),)
    x2 = lambda: (f(2, 3),)
    cls_target = lambda: (f(4, 5), torch.tensor([0, 2, 4, 1]))
    pair = lambda: (f(4, 5), f(4, 5))
    prob_pair = lambda: (torch.rand(4, 5), torch.rand(4, 5))
    seq = lambda: (f(5, 2, 4),)
    cases = {
        # activations (default args) take the 4-D input below; these need arguments or other inputs
        "GLU": (lambda: nn.GLU(), lambda: (f(2, 4, 6),)),
        "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2), lambda: (f(5, 2, 8), f(5, 2, 8), f(5, 2, 8))),
        "MultiheadAttention_batch_first_kdim": (
            lambda: nn.MultiheadAttention(8, 2, batch_first=True, kdim=6, vdim=4),
            lambda: (f(2, 5, 8), f(2, 3, 6), f(2, 3, 4))),
        "PReLU": (lambda: nn.PReLU(3), x4),
        "Softmax": (lambda: nn.Softmax(dim=1), x4),
        "Softmin": (lambda: nn.Softmin(dim=1), x4),
        "LogSoftmax": (lambda: nn.LogSoftmax(dim=1), x4),
        "Softmax2d": (lambda: nn.Softmax2d(), x4),
        "AdaptiveLogSoftmaxWithLoss": (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 8]),
                                       lambda: (f(4, 8), torch.tensor([0, 5, 9, 3]))),
        # convolutions
        "Conv1d": (lambda: nn.Conv1d(3, 4, 3, padding=1), x3),
        "Conv2d": (lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1, groups=1), x4),
        "Conv2d_groups_dilation": (lambda: nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=2), lambda: (f(2, 4, 8, 8),)),
        "Conv2d_padding_same_reflect": (lambda: nn.Conv2d(3, 4, 3, padding="same", padding_mode="reflect"), x4),
        "Conv2d_circular": (lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular"), x4),
        "Conv3d": (lambda: nn.Conv3d(3, 4, 3, padding=1), x5),
        "ConvTranspose1d": (lambda: nn.ConvTranspose1d(3, 4, 3, stride=2), x3),
        "ConvTranspose2d": (lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1), x4),
        "ConvTranspose3d": (lambda: nn.ConvTranspose3d(3, 4, 3, stride=2), x5),
        "LazyConv2d": (lambda: nn.LazyConv2d(4, 3), x4),
        "Fold": (lambda: nn.Fold((4, 4), 2), lambda: (f(2, 12, 9),)),
        "Unfold": (lambda: nn.Unfold(2), x4),
        # linear
        "Linear": (lambda: nn.Linear(3, 4), x2),
        "LazyLinear": (lambda: nn.LazyLinear(4), x2),
        "Bilinear": (lambda: nn.Bilinear(3, 5, 4), lambda: (f(2, 3), f(2, 5))),
        "Identity": (lambda: nn.Identity(), x2),
        "Flatten": (lambda: nn.Flatten(), x4),
        "Unflatten": (lambda: nn.Unflatten(1, (3, 1)), x2),
        "Embedding": (lambda: nn.Embedding(10, 4, padding_idx=0), lambda: (torch.tensor([[1, 0, 3], [9, 2, 2]]),)),
        "Embedding_maxnorm": (lambda: nn.Embedding(10, 4, max_norm=1.0), lambda: (torch.tensor([[1, 0, 3]]),)),
        "EmbeddingBag": (lambda: nn.EmbeddingBag(10, 4, mode="mean"), lambda: (torch.tensor([[1, 0, 3], [9, 2, 2]]),)),
        "EmbeddingBag_sum_offsets": (lambda: nn.EmbeddingBag(10, 4, mode="sum"),
                                     lambda: (torch.tensor([1, 0, 3, 9, 2]), torch.tensor([0, 2]))),
        "EmbeddingBag_max": (lambda: nn.EmbeddingBag(10, 4, mode="max"), lambda: (torch.tensor([[1, 0, 3], [9, 2, 2]]),)),
        # normalization
        "BatchNorm1d": (lambda: nn.BatchNorm1d(3), x3),
        "BatchNorm2d": (lambda: nn.BatchNorm2d(3), x4),
        "BatchNorm3d": (lambda: nn.BatchNorm3d(3), x5),
        "LazyBatchNorm2d": (lambda: nn.LazyBatchNorm2d(), x4),
        "SyncBatchNorm": None,  # needs a process group
        "GroupNorm": (lambda: nn.GroupNorm(1, 3), x4),
        "InstanceNorm1d": (lambda: nn.InstanceNorm1d(3, affine=True, track_running_stats=True), x3),
        "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3), x4),
        "InstanceNorm3d": (lambda: nn.InstanceNorm3d(3), x5),
        "LayerNorm": (lambda: nn.LayerNorm(8), x4),
        "LocalResponseNorm": (lambda: nn.LocalResponseNorm(2), x4),
        "CrossMapLRN2d": (lambda: nn.CrossMapLRN2d(3), x4),
        # pooling
        "MaxPool1d": (lambda: nn.MaxPool1d(2), x3),
        "MaxPool2d": (lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), x4),
        "MaxPool2d_indices": (lambda: nn.MaxPool2d(2, return_indices=True), x4),
        "MaxPool3d": (lambda: nn.MaxPool3d(2), x5),
        "MaxUnpool1d": (lambda: nn.MaxUnpool1d(2), lambda: nn.functional.max_pool1d(f(2, 3, 8), 2, return_indices=True)),
        "MaxUnpool2d": (lambda: nn.MaxUnpool2d(2), lambda: nn.functional.max_pool2d(f(2, 3, 8, 8), 2, return_indices=True)),
        "MaxUnpool3d": (lambda: nn.MaxUnpool3d(2), lambda: nn.functional.max_pool3d(f(2, 3, 4, 6, 6), 2, return_indices=True)),
        "AvgPool1d": (lambda: nn.AvgPool1d(2), x3),
        "AvgPool2d": (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), x4),
        "AvgPool3d": (lambda: nn.AvgPool3d(2), x5),
        "LPPool1d": (lambda: nn.LPPool1d(2, 2), x3),
        "LPPool2d": (lambda: nn.LPPool2d(2, 2), x4),
        "FractionalMaxPool2d": (lambda: nn.FractionalMaxPool2d(2, output_size=3), x4),
        "FractionalMaxPool3d": (lambda: nn.FractionalMaxPool3d(2, output_size=2), x5),
        "AdaptiveMaxPool1d": (lambda: nn.AdaptiveMaxPool1d(3), x3),
        "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(3), x4),
        "AdaptiveMaxPool3d": (lambda: nn.AdaptiveMaxPool3d(2), x5),
        "AdaptiveAvgPool1d": (lambda: nn.AdaptiveAvgPool1d(3), x3),
        "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d(3), x4),
        "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d(2), x5),
        # padding
        "ReflectionPad1d": (lambda: nn.ReflectionPad1d(2), x3),
        "ReflectionPad2d": (lambda: nn.ReflectionPad2d(2), x4),
        "ReflectionPad3d": (lambda: nn.ReflectionPad3d(1), x5),
        "ReplicationPad1d": (lambda: nn.ReplicationPad1d(2), x3),
        "ReplicationPad2d": (lambda: nn.ReplicationPad2d(2), x4),
        "ReplicationPad3d": (lambda: nn.ReplicationPad3d(1), x5),
        "ZeroPad2d": (lambda: nn.ZeroPad2d(2), x4),
        "ConstantPad1d": (lambda: nn.ConstantPad1d(2, 1.5), x3),
        "ConstantPad2d": (lambda: nn.ConstantPad2d(2, 1.5), x4),
        "ConstantPad3d": (lambda: nn.ConstantPad3d(1, 1.5), x5),
        # upsampling / shuffles
        "Upsample_nearest": (lambda: nn.Upsample(scale_factor=2), x4),
        "Upsample_bilinear": (lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False), x4),
        "Upsample_bicubic": (lambda: nn.Upsample(size=(5, 7), mode="bicubic", align_corners=True), x4),
        "Upsample_linear": (lambda: nn.Upsample(scale_factor=2, mode="linear"), x3),
        "Upsample_trilinear": (lambda: nn.Upsample(scale_factor=2, mode="trilinear"), x5),
        "Upsample_nearest_exact": (lambda: nn.Upsample(size=5, mode="nearest-exact"), x4),
        "UpsamplingNearest2d": (lambda: nn.UpsamplingNearest2d(scale_factor=2), x4),
        "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d(scale_factor=2), x4),
        "PixelShuffle": (lambda: nn.PixelShuffle(2), lambda: (f(2, 8, 3, 3),)),
        "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), x4),
        "ChannelShuffle": (lambda: nn.ChannelShuffle(3), lambda: (f(2, 6, 4, 4),)),
        # dropout
        "Dropout": (lambda: nn.Dropout(), x4),
        "Dropout1d": (lambda: nn.Dropout1d(), x3),
        "Dropout2d": (lambda: nn.Dropout2d(), x4),
        "Dropout3d": (lambda: nn.Dropout3d(), x5),
        "AlphaDropout": (lambda: nn.AlphaDropout(), x4),
        "FeatureAlphaDropout": (lambda: nn.FeatureAlphaDropout(), x4),
        # distances
        "CosineSimilarity": (lambda: nn.CosineSimilarity(), pair),
        "PairwiseDistance": (lambda: nn.PairwiseDistance(), pair),
        # recurrent
        "RNN": (lambda: nn.RNN(4, 6, num_layers=2), seq),
        "RNN_relu_bidirectional": (lambda: nn.RNN(4, 6, nonlinearity="relu", bidirectional=True, batch_first=True), seq),
        "LSTM": (lambda: nn.LSTM(4, 6, num_layers=2, dropout=0.5), seq),
        "LSTM_bidirectional_proj": (lambda: nn.LSTM(4, 6, bidirectional=True, proj_size=3), seq),
        "LSTM_packed": (lambda: nn.LSTM(4, 6), lambda: (nn.utils.rnn.pack_padded_sequence(f(5, 2, 4), [5, 3]),)),
        "GRU": (lambda: nn.GRU(4, 6, num_layers=2, bidirectional=True), seq),
        "RNNCell": (lambda: nn.RNNCell(4, 6), lambda: (f(2, 4),)),
        "LSTMCell": (lambda: nn.LSTMCell(4, 6), lambda: (f(2, 4),)),
        "GRUCell": (lambda: nn.GRUCell(4, 6), lambda: (f(2, 4),)),
        # transformers
        "Transformer": (lambda: nn.Transformer(8, 2, 1, 1, 16), lambda: (f(5, 2, 8), f(4, 2, 8))),
        "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, 16), lambda: (f(5, 2, 8),)),
        "TransformerEncoderLayer_norm_first_gelu": (
            lambda: nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", norm_first=True, batch_first=True),
            lambda: (f(2, 5, 8),)),
        "TransformerEncoder": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2),
                               lambda: (f(5, 2, 8),)),
        "TransformerDecoderLayer": (lambda: nn.TransformerDecoderLayer(8, 2, 16), lambda: (f(5, 2, 8), f(4, 2, 8))),
        "TransformerDecoder": (lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 2),
                               lambda: (f(5, 2, 8), f(4, 2, 8))),
        "LazyBatchNorm1d": (lambda: nn.LazyBatchNorm1d(), x3),
        "LazyBatchNorm3d": (lambda: nn.LazyBatchNorm3d(), x5),
        "LazyInstanceNorm1d": (lambda: nn.LazyInstanceNorm1d(), x3),
        "LazyInstanceNorm3d": (lambda: nn.LazyInstanceNorm3d(), x5),
        "LazyConv1d": (lambda: nn.LazyConv1d(4, 3), x3),
        "LazyConv3d": (lambda: nn.LazyConv3d(4, 3), x5),
        "LazyConvTranspose1d": (lambda: nn.LazyConvTranspose1d(4, 3), x3),
        "LazyConvTranspose2d": (lambda: nn.LazyConvTranspose2d(4, 3), x4),
        "LazyConvTranspose3d": (lambda: nn.LazyConvTranspose3d(4, 3), x5),
        "Threshold": (lambda: nn.Threshold(0.1, 20.0), x4),
        "DataParallel": (lambda: nn.DataParallel(nn.Linear(3, 4)), x2),
        "RNNBase": None, "RNNCellBase": None, "Upsample": None,  # abstract bases; Upsample's modes are above
        # containers
        "Sequential": (lambda: nn.Sequential(nn.Linear(3, 4), nn.ReLU()), x2),
        "ModuleList": None, "ModuleDict": None, "ParameterList": None, "ParameterDict": None, "Container": None,
        "Module": None,
        # losses
        "L1Loss": (lambda: nn.L1Loss(), pair),
        "MSELoss": (lambda: nn.MSELoss(), pair),
        "SmoothL1Loss": (lambda: nn.SmoothL1Loss(beta=0.5), pair),
        "HuberLoss": (lambda: nn.HuberLoss(), pair),
        "SoftMarginLoss": (lambda: nn.SoftMarginLoss(), lambda: (f(4, 5), torch.sign(f(4, 5)))),
        "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(label_smoothing=0.1), cls_target),
        "CrossEntropyLoss_probs": (lambda: nn.CrossEntropyLoss(), lambda: (f(4, 5), torch.softmax(f(4, 5), 1))),
        "CrossEntropyLoss_2d_weight_ignore": (lambda: nn.CrossEntropyLoss(weight=torch.rand(5), ignore_index=1),
                                              lambda: (f(2, 5, 3, 3), torch.randint(0, 5, (2, 3, 3)))),
        "NLLLoss": (lambda: nn.NLLLoss(), lambda: (torch.log_softmax(f(4, 5), 1), torch.tensor([0, 2, 4, 1]))),
        "NLLLoss2d": (lambda: nn.NLLLoss(reduction="sum"),
                      lambda: (torch.log_softmax(f(2, 5, 3, 3), 1), torch.randint(0, 5, (2, 3, 3)))),
        "BCELoss": (lambda: nn.BCELoss(), prob_pair),
        "BCEWithLogitsLoss": (lambda: nn.BCEWithLogitsLoss(pos_weight=torch.rand(5)), prob_pair),
        "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean"), lambda: (torch.log_softmax(f(4, 5), 1), torch.rand(4, 5))),
        "PoissonNLLLoss": (lambda: nn.PoissonNLLLoss(), prob_pair),
        "GaussianNLLLoss": (lambda: nn.GaussianNLLLoss(), lambda: (f(4, 5), f(4, 5), torch.rand(4, 5))),
        "MarginRankingLoss": (lambda: nn.MarginRankingLoss(), lambda: (f(4), f(4), torch.sign(f(4)))),
        "HingeEmbeddingLoss": (lambda: nn.HingeEmbeddingLoss(), lambda: (f(4, 5), torch.sign(f(4, 5)))),
        "CosineEmbeddingLoss": (lambda: nn.CosineEmbeddingLoss(), lambda: (f(4, 5), f(4, 5), torch.sign(f(4)))),
        "MultiLabelMarginLoss": (lambda: nn.MultiLabelMarginLoss(), lambda: (f(4, 5), torch.tensor([[3, 0, -1, 1, 2]] * 4))),
        "MultiLabelSoftMarginLoss": (lambda: nn.MultiLabelSoftMarginLoss(), lambda: (f(4, 5), torch.randint(0, 2, (4, 5)).float())),
        "MultiMarginLoss": (lambda: nn.MultiMarginLoss(), cls_target),
        "TripletMarginLoss": (lambda: nn.TripletMarginLoss(), lambda: (f(4, 5), f(4, 5), f(4, 5))),
        "TripletMarginWithDistanceLoss": (lambda: nn.TripletMarginWithDistanceLoss(), lambda: (f(4, 5), f(4, 5), f(4, 5))),
        "CTCLoss": (lambda: nn.CTCLoss(), lambda: (torch.log_softmax(f(6, 2, 5), 2), torch.randint(1, 5, (2, 3)),
                                                   torch.tensor([6, 5]), torch.tensor([3, 2]))),
    }
    # classes that newer PyTorch versions add (2.x): only where they exist, so older versions' figures stay
    newer = {
        "CircularPad1d": (lambda: nn.CircularPad1d(1), x3),
        "CircularPad2d": (lambda: nn.CircularPad2d(1), x4),
        "CircularPad3d": (lambda: nn.CircularPad3d(1), x5),
        "ZeroPad1d": (lambda: nn.ZeroPad1d(2), x3),
        "ZeroPad3d": (lambda: nn.ZeroPad3d(1), x5),
        "LPPool3d": (lambda: nn.LPPool3d(2, 2), x5),
        "RMSNorm": (lambda: nn.RMSNorm(8), x4),
    }
    cases.update({n: spec for n, spec in newer.items() if hasattr(nn, n)})
    # every other class in torch.nn that is a Module: build it without arguments and feed a 4-D input
    names = sorted(n for n, c in vars(nn).items() if inspect.isclass(c) and issubclass(c, nn.Module))
    out = []
    for n in names:
        if n in cases:
            continue
        cases[n] = (getattr(nn, n), x4)
    for n, spec in sorted(cases.items()):
        if spec is not None:
            out.append((n, spec[0], spec[1]))
    return out


def run_module(mod_fn, in_fn, train):
    m = mod_fn()
    m.train(train)
    args = in_fn()
    if train:
        # a loss's target need not be differentiable (soft_margin_loss's is not): only its input needs a gradient
        is_loss = type(m).__name__.endswith("Loss")
        args = tuple(a.detach().requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point()
                     and (i == 0 or not is_loss) else a for i, a in enumerate(args))
        backward_of(m(*args))
    else:
        with torch.no_grad():
            m(*args)


@family("nn")
def nn_family():
    for name, mod_fn, in_fn in nn_cases():
        run_case(name + "[train]", lambda mod_fn=mod_fn, in_fn=in_fn: run_module(mod_fn, in_fn, True))
        run_case(name + "[eval]", lambda mod_fn=mod_fn, in_fn=in_fn: run_module(mod_fn, in_fn, False))


# -------------------------------------------------------------------------------------------- torchvision
def vision_builders(kind):
    import torchvision.models as M
    if kind == "classification":
        mods = [M]
    elif kind == "detection":
        mods = [M.detection, M.segmentation]
    elif kind == "video":
        mods = [M.video, M.optical_flow]
    out = []
    for mod in mods:
        for n in sorted(dir(mod)):
            fn = getattr(mod, n)
            if n.startswith("_") or not inspect.isfunction(fn) or n[0].isupper():
                continue
            params = inspect.signature(fn).parameters
            if "weights" not in params:
                continue
            if kind == "classification" and fn.__module__.split(".")[2] in ("detection", "segmentation", "video",
                                                                             "optical_flow", "quantization"):
                continue
            out.append((n, fn))
    return out


def vision_run(name, fn, kind):
    import torchvision  # noqa: F401 (registers the torchvision:: ops the detection models call)
    kw = {"weights": None}
    size = 64
    if kind == "classification":
        if name.startswith("vit_"):
            kw["image_size"] = 32 if name.endswith("14") is False else 28
            size = kw["image_size"]
        elif name.startswith("maxvit"):  # every stage's size must divide by the partition size 7
            kw["input_size"] = (224, 224)
            size = 224
        elif name in ("inception_v3", "googlenet"):
            kw["aux_logits"] = True
            kw["init_weights"] = False
            size = 80
        m = fn(**kw).eval()
        with torch.no_grad():
            m(torch.rand(1, 3, size, size))
    elif kind == "detection":
        kw["weights_backbone"] = None
        if "rcnn" in name or "retinanet" in name or "fcos" in name:
            kw.update(min_size=64, max_size=64)
        m = fn(**kw).eval()
        with torch.no_grad():
            if fn.__module__.startswith("torchvision.models.segmentation"):
                m(torch.rand(1, 3, 64, 64))
            else:
                m([torch.rand(3, 64, 80)])
    else:
        if name.startswith("raft"):  # torchvision 0.24 wants feature maps of 16x16 at least: 128x128 frames
            m = fn(**kw).eval()
            with torch.no_grad():
                m(torch.rand(1, 3, 128, 128), torch.rand(1, 3, 128, 128), num_flow_updates=2)
            return
        m = fn(**kw).eval()
        if name.startswith("mvit") or name == "s3d":
            x = torch.rand(1, 3, 16, 224, 224)
        else:
            x = torch.rand(1, 3, 4, 32, 32)
        with torch.no_grad():
            m(x)


def vision_family(kind, part=None, parts=1, only=None):
    builders = vision_builders(kind)
    for i, (name, fn) in enumerate(builders):
        if part is not None and i % parts != part:
            continue
        if only is not None and name not in only:
            continue
        run_case(name, lambda name=name, fn=fn: vision_run(name, fn, kind))


for _p in range(3):
    FAMILIES["vision_classification%d" % (_p + 1)] = (lambda p: (lambda: vision_family("classification", p, 3)))(_p)
FAMILIES["vision_detection"] = lambda: vision_family("detection")
FAMILIES["vision_video"] = lambda: vision_family("video")

# `models_sample`: a representative subset of the model families (vision_*, audio_models) that runs in a few
# minutes, the PyTorch 2.x tier's ctest (sweep_torch2_models_sample; docs/coverage.md): a small builder of most
# torchvision classification architectures (CNNs, mobile nets, a ViT, a Swin), two detectors (roi_align, nms), two
# segmenters, two video models and optical flow, and the small torchaudio models in eval and train. The full
# families stay the longer run.
MODELS_SAMPLE = {
    "classification": ("alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "googlenet", "inception_v3",
                       "mnasnet0_5", "mobilenet_v2", "mobilenet_v3_small", "regnet_x_400mf", "regnet_y_400mf",
                       "resnet18", "resnext50_32x4d", "shufflenet_v2_x0_5", "squeezenet1_1", "swin_t", "vit_b_32"),
    "detection": ("fasterrcnn_mobilenet_v3_large_320_fpn", "maskrcnn_resnet50_fpn", "deeplabv3_mobilenet_v3_large",
                  "lraspp_mobilenet_v3_large"),
    "video": ("r2plus1d_18", "r3d_18", "raft_small"),
    "audio": ("Conformer", "ConvTasNet", "DeepSpeech", "Emformer", "RNNT", "Tacotron2", "Wav2Letter", "WaveRNN"),
}


@family("models_sample")
def models_sample_family():
    for kind in ("classification", "detection", "video"):
        vision_family(kind, only=MODELS_SAMPLE[kind])
    audio_family(transforms=False, only=MODELS_SAMPLE["audio"])


# --------------------------------------------------------------------------------------------- torchaudio
@family("audio_transforms")
def audio_transforms_family():
    audio_family(models=False)


@family("audio_models")
def audio_models_family():
    audio_family(transforms=False)


def audio_family(models=True, transforms=True, only=None):
    import torchaudio
    import torchaudio.models as A
    import torchaudio.transforms as T
    wav = lambda n=1600: torch.rand(1, n) * 2 - 1
    spec = lambda: T.Spectrogram(n_fft=64)(wav())
    cspec = lambda: T.Spectrogram(n_fft=64, power=None)(wav())
    cases = {  # the transforms' cases (the `transforms` argument says whether they run)
        "Spectrogram": lambda: T.Spectrogram(n_fft=64)(wav()),
        "Spectrogram_complex": lambda: T.Spectrogram(n_fft=64, power=None, center=False)(wav()),
        "InverseSpectrogram": lambda: T.InverseSpectrogram(n_fft=64)(cspec()),
        "GriffinLim": lambda: T.GriffinLim(n_fft=64, n_iter=2)(spec()),
        "AmplitudeToDB": lambda: T.AmplitudeToDB()(spec()),
        "MelScale": lambda: T.MelScale(n_mels=8, sample_rate=8000, n_stft=33)(spec()),
        "InverseMelScale": lambda: T.InverseMelScale(n_stft=33, n_mels=8, sample_rate=8000, max_iter=2)(
            T.MelScale(n_mels=8, sample_rate=8000, n_stft=33)(spec())),
        "MelSpectrogram": lambda: T.MelSpectrogram(sample_rate=8000, n_fft=64, n_mels=8)(wav()),
        "MFCC": lambda: T.MFCC(sample_rate=8000, n_mfcc=6, melkwargs={"n_fft": 64, "n_mels": 8})(wav()),
        "LFCC": lambda: T.LFCC(sample_rate=8000, n_lfcc=6, n_filter=8, speckwargs={"n_fft": 64})(wav()),
        "MuLawEncoding": lambda: T.MuLawEncoding()(wav()),
        "MuLawDecoding": lambda: T.MuLawDecoding()(torch.randint(0, 256, (1, 100))),
        "Resample": lambda: T.Resample(8000, 6000)(wav()),
        "Resample_kaiser": lambda: T.Resample(8000, 16000, resampling_method="kaiser_window")(wav()),
        "TimeStretch": lambda: T.TimeStretch(n_freq=33, hop_length=16)(cspec(), 1.3),
        "Fade": lambda: T.Fade(100, 100, "logarithmic")(wav()),
        "FrequencyMasking": lambda: T.FrequencyMasking(4)(spec()),
        "TimeMasking": lambda: T.TimeMasking(4)(spec()),
        "Vol": lambda: T.Vol(0.5, "amplitude")(wav()),
        "Vol_db": lambda: T.Vol(2.0, "db")(wav()),
        "SlidingWindowCmn": lambda: T.SlidingWindowCmn(cmn_window=20)(spec().transpose(-1, -2)),
        "Vad": lambda: T.Vad(sample_rate=8000)(wav(4000)),
        "SpectralCentroid": lambda: T.SpectralCentroid(8000, n_fft=64)(wav()),
        "PitchShift": lambda: T.PitchShift(8000, 2, n_fft=64)(wav()),
        "ComputeDeltas": lambda: T.ComputeDeltas()(spec()),
        "Loudness": lambda: T.Loudness(8000)(wav(8000)),
        "RNNTLoss": lambda: T.RNNTLoss()(f(1, 4, 3, 5), torch.tensor([[1, 2]], dtype=torch.int32),
                                         torch.tensor([4], dtype=torch.int32), torch.tensor([2], dtype=torch.int32)),
        "PSD": lambda: T.PSD()(T.Spectrogram(n_fft=64, power=None)(torch.rand(2, 1600)), torch.rand(33, 51)),
        "MVDR": lambda: T.MVDR()(T.Spectrogram(n_fft=64, power=None)(torch.rand(2, 1600)), torch.rand(33, 51)),
        "SoudenMVDR": lambda: T.SoudenMVDR()(
            T.Spectrogram(n_fft=64, power=None)(torch.rand(2, 1600)),
            T.PSD()(T.Spectrogram(n_fft=64, power=None)(torch.rand(2, 1600)), torch.rand(33, 51)),
            T.PSD()(T.Spectrogram(n_fft=64, power=None)(torch.rand(2, 1600)), torch.rand(33, 51)), 0),
        "RTFMVDR": lambda: T.RTFMVDR()(
            T.Spectrogram(n_fft=64, power=None)(torch.rand(2, 1600)),
            torch.rand(33, 2, dtype=torch.cfloat),
            T.PSD()(T.Spectrogram(n_fft=64, power=None)(torch.rand(2, 1600)), torch.rand(33, 51)), 0),
    }
    for n in sorted(x for x in dir(T) if not x.startswith("_") and x[0].isupper()):
        if n not in cases and not any(k.startswith(n + "_") for k in cases):
            cases[n] = None
    for n, fn in sorted(cases.items() if transforms else []):
        if fn is None:
            print("SKIP %s: no case written for this transform" % n, file=sys.stderr)
            RESULTS["skip"] += 1
            continue
        run_case("transforms." + n, fn)
    F = torchaudio.functional
    for n, fn in {
        "functional.lfilter": lambda: F.lfilter(wav(), torch.tensor([1.0, -0.5]), torch.tensor([0.5, 0.5])),
        "functional.biquad": lambda: F.biquad(wav(), 0.5, 0.1, 0.2, 1.0, -0.3, 0.1),
        "functional.compute_kaldi_pitch": None,
        "kaldi.fbank": lambda: torchaudio.compliance.kaldi.fbank(wav(), num_mel_bins=8, frame_length=10., frame_shift=5.),
        "kaldi.mfcc": lambda: torchaudio.compliance.kaldi.mfcc(wav(), num_mel_bins=8, num_ceps=6),
        "kaldi.spectrogram": lambda: torchaudio.compliance.kaldi.spectrogram(wav()),
        "functional.melscale_fbanks": lambda: F.melscale_fbanks(33, 0., 4000., 8, 8000),
        "functional.phase_vocoder": lambda: F.phase_vocoder(cspec(), 1.2, torch.linspace(0, 3.14 * 16, 33)[..., None]),
        "functional.detect_pitch_frequency": lambda: F.detect_pitch_frequency(wav(4000), 8000),
        "functional.spectral_centroid": None,
    }.items():
        if fn is not None and transforms:
            run_case(n, fn)
    if not models:
        return
    models = {
        "Conformer": lambda: A.Conformer(input_dim=16, num_heads=2, ffn_dim=32, num_layers=2,
                                         depthwise_conv_kernel_size=7)(f(2, 10, 16), torch.tensor([10, 8])),
        "conv_tasnet_base": lambda: A.conv_tasnet_base(num_sources=2)(wav(800)[None]),
        "ConvTasNet": lambda: A.ConvTasNet(num_sources=2, enc_kernel_size=16, enc_num_feats=32, msk_kernel_size=3,
                                           msk_num_feats=16, msk_num_hidden_feats=32, msk_num_layers=2,
                                           msk_num_stacks=1)(wav(800)[None]),
        "DeepSpeech": lambda: A.DeepSpeech(n_feature=16, n_hidden=32, n_class=10)(f(2, 1, 10, 16)),
        "Emformer": lambda: A.Emformer(16, 2, 32, 2, segment_length=4, right_context_length=1)(
            f(2, 13, 16), torch.tensor([13, 10])),
        "emformer_rnnt_base": lambda: A.emformer_rnnt_base(num_symbols=32)(
            f(1, 20, 80), torch.tensor([20]), torch.randint(0, 32, (1, 4)), torch.tensor([4])),
        "conformer_rnnt_base": None,
        "hdemucs_low": lambda: A.hdemucs_low(["a", "b"])(torch.rand(1, 2, 4096)),
        "hdemucs_medium": lambda: A.hdemucs_medium(["a", "b"])(torch.rand(1, 2, 4096)),
        "hdemucs_high": lambda: A.hdemucs_high(["a", "b"])(torch.rand(1, 2, 4096)),
        "HuBERTPretrainModel": lambda: A.hubert_pretrain_base(num_classes=10)(wav(4000),
                                                                             torch.randint(0, 10, (1, 12)), torch.tensor([4000])),
        "hubert_pretrain_large": lambda: A.hubert_pretrain_large()(wav(4000), torch.randint(0, 10, (1, 12)), torch.tensor([4000])),
        "hubert_pretrain_xlarge": lambda: A.hubert_pretrain_xlarge()(wav(4000), torch.randint(0, 10, (1, 12)), torch.tensor([4000])),
        "hubert_base": lambda: A.hubert_base()(wav(4000)),
        "hubert_large": lambda: A.hubert_large()(wav(4000)),
        "hubert_xlarge": lambda: A.hubert_xlarge()(wav(4000)),
        "RNNT": lambda: A.emformer_rnnt_model(
            input_dim=16, encoding_dim=16, num_symbols=10, segment_length=4, right_context_length=1,
            time_reduction_input_dim=16, time_reduction_stride=2, transformer_num_heads=2, transformer_ffn_dim=16,
            transformer_num_layers=1, transformer_dropout=0.0, transformer_activation="relu",
            transformer_left_context_length=4, transformer_max_memory_size=0, transformer_weight_init_scale_strategy=None,
            transformer_tanh_on_mem=False, symbol_embedding_dim=8, num_lstm_layers=1, lstm_layer_norm=True,
            lstm_layer_norm_epsilon=1e-5, lstm_dropout=0.0)(f(1, 13, 16), torch.tensor([13]),
                                                             torch.randint(0, 10, (1, 3)), torch.tensor([3])),
        "Tacotron2": lambda: tacotron_case(A),
        "Wav2Letter": lambda: A.Wav2Letter(num_classes=10, input_type="waveform")(wav(1600)[None]),
        "Wav2Letter_mfcc": lambda: A.Wav2Letter(num_classes=10, input_type="mfcc", num_features=13)(f(1, 13, 50)),
        "wav2vec2_base": lambda: A.wav2vec2_base()(wav(4000)),
        "wav2vec2_large": lambda: A.wav2vec2_large()(wav(4000)),
        "wav2vec2_large_lv60k": lambda: A.wav2vec2_large_lv60k()(wav(4000)),
        "WaveRNN": lambda: A.WaveRNN(upsample_scales=[2, 2], n_classes=16, hop_length=4, n_res_block=1, n_rnn=16,
                                     n_fc=16, n_freq=8, n_hidden=8, n_output=8)(torch.rand(1, 1, 4 * 6), f(1, 1, 8, 10)),
    }
    # the large variants share their layers with the base ones: eval only, to keep the sweep's time down
    large = ("large", "xlarge", "hdemucs_", "lv60k")
    for n, fn in sorted(models.items()):
        if fn is None or (only is not None and n not in only):
            continue
        for train in ((False,) if any(k in n for k in large) else (False, True)):
            def go(fn=fn, train=train):
                torch.manual_seed(0)
                if train:
                    backward_of(fn())
                else:
                    with torch.no_grad():
                        fn()
            run_case("models.%s[%s]" % (n, "train" if train else "eval"), go)


def tacotron_case(A):
    m = A.Tacotron2(n_symbol=20, n_mels=8, symbol_embedding_dim=16, encoder_embedding_dim=16, encoder_n_convolution=1, encoder_kernel_size=3,
                    decoder_rnn_dim=16, decoder_max_step=5, decoder_dropout=0.0, decoder_early_stopping=True,
                    attention_rnn_dim=16, attention_hidden_dim=8, attention_location_n_filter=4,
                    attention_location_kernel_size=3, attention_dropout=0.0, prenet_dim=8, postnet_n_convolution=1,
                    postnet_kernel_size=3, postnet_embedding_dim=8, gate_threshold=0.5)
    tokens = torch.randint(1, 20, (2, 6))
    lengths = torch.tensor([6, 4])
    out = m(tokens, lengths, f(2, 8, 7), torch.tensor([7, 5]))
    m.eval()
    m.infer(tokens, lengths)
    return out


# ------------------------------------------------------------------------------------------ tensor factories
@family("factory")
def factory_family():
    dtypes = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bfloat16, torch.float16, torch.complex64,
              torch.bool, torch.uint8, torch.int8, torch.int16]
    float_dtypes = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
    cases = {}
    for w in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"):
        for dt in float_dtypes:
            cases["%s[%s]" % (w, dt)] = (lambda w=w, dt=dt: (getattr(torch, w)(8, dtype=dt),
                                                             getattr(torch, w)(7, periodic=False, dtype=dt),
                                                             getattr(torch, w)(1, dtype=dt)))
    cases["hamming_window_alpha_beta"] = lambda: torch.hamming_window(8, True, 0.5, 0.4)
    cases["kaiser_window_beta"] = lambda: torch.kaiser_window(8, True, 5.0)
    for dt in dtypes:
        name = str(dt).replace("torch.", "")
        num = dt not in (torch.bool,)
        cases["zeros[%s]" % name] = lambda dt=dt: (torch.zeros(3, 4, dtype=dt), torch.zeros((), dtype=dt))
        cases["ones[%s]" % name] = lambda dt=dt: torch.ones(2, 3, dtype=dt)
        cases["full[%s]" % name] = lambda dt=dt: torch.full((2, 3), 1, dtype=dt)
        cases["empty[%s]" % name] = lambda dt=dt: (torch.empty(2, 3, dtype=dt), torch.empty_strided((2, 3), (1, 2), dtype=dt))
        cases["eye[%s]" % name] = lambda dt=dt: (torch.eye(3, dtype=dt), torch.eye(2, 4, dtype=dt))
        cases["like[%s]" % name] = lambda dt=dt: (lambda t: (torch.zeros_like(t), torch.ones_like(t), torch.empty_like(t),
                                                             torch.full_like(t, 1)))(torch.ones(2, 3, dtype=dt))
        cases["tensor[%s]" % name] = lambda dt=dt: (torch.tensor([1, 0, 1], dtype=dt), torch.as_tensor([[1, 2]], dtype=dt),
                                                    torch.scalar_tensor(1, dtype=dt))
        if num:
            cases["arange[%s]" % name] = lambda dt=dt: (torch.arange(5, dtype=dt), torch.arange(1, 7, 2, dtype=dt))
        if dt in float_dtypes or dt in (torch.complex64,):
            cases["linspace[%s]" % name] = lambda dt=dt: (torch.linspace(0, 1, 5, dtype=dt), torch.linspace(2, 2, 1, dtype=dt))
            cases["logspace[%s]" % name] = lambda dt=dt: (torch.logspace(0, 2, 5, dtype=dt),
                                                          torch.logspace(0, 2, 4, base=2, dtype=dt))
    for dt in float_dtypes:
        name = str(dt).replace("torch.", "")
        cases["rand[%s]" % name] = lambda dt=dt: (torch.rand(2, 3, dtype=dt), torch.randn(2, 3, dtype=dt),
                                                  torch.rand_like(torch.ones(2, dtype=dt)),
                                                  torch.randn_like(torch.ones(2, dtype=dt)))
        cases["normal[%s]" % name] = lambda dt=dt: (torch.normal(torch.zeros(3, dtype=dt), 1.0),
                                                    torch.normal(0.0, 1.0, (2, 3), dtype=dt),
                                                    torch.empty(3, dtype=dt).uniform_(), torch.empty(3, dtype=dt).normal_(),
                                                    torch.empty(3, dtype=dt).exponential_(),
                                                    torch.empty(3, dtype=dt).cauchy_(),
                                                    torch.empty(3, dtype=dt).log_normal_(),
                                                    torch.empty(3, dtype=dt).geometric_(0.5))
    cases["arange_float"] = lambda: (torch.arange(0, 1, 0.25), torch.arange(5.0), torch.arange(0.5, 3))
    cases["linspace_int"] = lambda: torch.linspace(0, 10, 5, dtype=torch.int64)
    cases["randint"] = lambda: (torch.randint(0, 5, (3, 4)), torch.randint(5, (2,), dtype=torch.int32),
                                torch.randint_like(torch.ones(3), 4))
    cases["randperm"] = lambda: (torch.randperm(6), torch.randperm(4, dtype=torch.int32))
    cases["bernoulli"] = lambda: (torch.bernoulli(torch.rand(3)), torch.rand(3).bernoulli_(0.3))
    cases["multinomial"] = lambda: (torch.multinomial(torch.rand(2, 5), 3), torch.multinomial(torch.rand(5), 4, True))
    cases["poisson"] = lambda: torch.poisson(torch.rand(4) * 3)
    cases["tril_triu_indices"] = lambda: (torch.tril_indices(3, 4), torch.triu_indices(4, 3, 1))
    cases["complex_polar"] = lambda: (torch.complex(torch.rand(3), torch.rand(3)), torch.polar(torch.rand(3), torch.rand(3)))
    cases["meshgrid"] = lambda: (torch.meshgrid(torch.arange(3), torch.arange(4), indexing="ij"),
                                 torch.meshgrid(torch.arange(3.), torch.arange(2.), indexing="xy"))
    cases["cartesian_prod_combinations"] = lambda: (torch.cartesian_prod(torch.arange(3), torch.arange(2)),
                                                    torch.combinations(torch.arange(4), 2))
    cases["from_numpy_frombuffer"] = lambda: torch.frombuffer(bytearray(16), dtype=torch.float32)
    cases["vander"] = lambda: torch.vander(torch.arange(1., 4.), 3)
    cases["heaviside_fill"] = lambda: torch.empty(3).fill_(2.0)
    cases["diag_embed_eye_like"] = lambda: torch.diag_embed(torch.ones(2, 3))
    cases["sparse_coo"] = lambda: torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.0, 2.0]), (2, 2)) \
        .to_dense()
    cases["sparse_ops"] = lambda: (lambda s: (s + s).coalesce().to_dense())(torch.eye(3).to_sparse())
    for n, fn in sorted(cases.items()):
        run_case(n, fn)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in FAMILIES:
        sys.stderr.write("usage: sweep_cases.py FAMILY  (one of %s)\n" % ", ".join(sorted(FAMILIES)))
        sys.exit(2)
    FAMILIES[sys.argv[1]]()
    print("CASES ok=%d skipped=%d" % (RESULTS["ok"], RESULTS["skip"]), file=sys.stderr)
