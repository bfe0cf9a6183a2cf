#!/usr/bin/env python3
# Value check of the lowerings the coverage sweep added (backward ops of torch.nn modules, windows, pad
# gradients, ...), which OpInfo's samples do not dispatch: records each case's aten calls with their values
# (gen_samples.py's recorder), runs conformance_runner on them (lower + evaluate with `interp` + compare with
# PyTorch) and fails unless every call of the ops listed in CHECKED matches.
# Usage: /usr/bin/python3 sweep_values.py RUNNER WORK_DIR
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "capture"))
import torch  # noqa: E402
import gen_samples  # noqa: E402

nn = torch.nn
F = torch.nn.functional


def grad(fn, *xs):
    xs = [x.detach().requires_grad_() for x in xs]
    out = fn(*xs)
    out.backward(torch.linspace(-1, 1, out.numel()).reshape(out.shape) if out.dim() else None)


CASES = {
    "hardshrink_backward": lambda: grad(lambda x: F.hardshrink(x, 0.3), torch.randn(3, 4)),
    "softshrink_backward": lambda: grad(lambda x: F.softshrink(x, 0.3), torch.randn(3, 4)),
    "prelu_backward": lambda: grad(lambda x, w: F.prelu(x, w), torch.randn(2, 3, 4), torch.rand(3)),
    "prelu_backward_single": lambda: grad(lambda x, w: F.prelu(x, w), torch.randn(2, 3), torch.rand(1)),
    "rrelu_backward_eval": lambda: grad(lambda x: F.rrelu(x, training=False), torch.randn(3, 4)),
    "elu_backward": lambda: grad(lambda x: F.elu(x, 0.7), torch.randn(3, 4)),
    "soft_margin_loss_backward": lambda: grad(lambda x: F.soft_margin_loss(x, torch.sign(torch.randn(3, 4))),
                                              torch.randn(3, 4)),
    "multi_margin_loss_backward": lambda: grad(lambda x: F.multi_margin_loss(x, torch.tensor([0, 2, 1])),
                                               torch.randn(3, 4)),
    "multi_margin_loss_backward_p2_weight_none": lambda: grad(
        lambda x: F.multi_margin_loss(x, torch.tensor([0, 2, 1]), p=2, weight=torch.rand(4), reduction="none"),
        torch.randn(3, 4)),
    "reflection_pad1d_backward": lambda: grad(lambda x: F.pad(x, (2, 3), mode="reflect"), torch.randn(2, 3, 5)),
    "reflection_pad2d_backward":
        lambda: grad(lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), torch.randn(1, 2, 4, 5)),
    "replication_pad2d_backward": lambda: grad(lambda x: F.pad(x, (1, 2, 3, 1), mode="replicate"),
                                               torch.randn(1, 2, 4, 5)),
    "replication_pad3d_backward": lambda: grad(lambda x: F.pad(x, (1, 0, 0, 2, 1, 1), mode="replicate"),
                                               torch.randn(1, 1, 3, 3, 3)),
    "channel_shuffle": lambda: nn.ChannelShuffle(3)(torch.randn(2, 6, 2, 2)),
    "unsafe_split": lambda: torch.randn(2, 7).unsafe_split(3, 1),
    "unsafe_chunk": lambda: torch.randn(2, 7).unsafe_chunk(3, 1),
    "fractional_max_pool2d_backward": lambda: grad(lambda x: F.fractional_max_pool2d(
        x, 2, output_size=3, _random_samples=torch.rand(1, 2, 2)), torch.randn(1, 2, 6, 6)),
    "fractional_max_pool3d_backward": lambda: grad(lambda x: F.fractional_max_pool3d(
        x, 2, output_size=2, _random_samples=torch.rand(1, 2, 3)), torch.randn(1, 2, 4, 4, 4)),
    "embedding_renorm_": lambda: F.embedding(torch.tensor([[1, 3], [3, 0]]), torch.randn(5, 3) * 3, max_norm=1.0),
    "transpose_": lambda: torch.randn(2, 3, 4).transpose_(0, 2),
    "transpose_complex": lambda: torch.randn(1, 4, 5, dtype=torch.cfloat).transpose_(1, 2),
    "t_": lambda: torch.randn(3, 2).t_(),
    "unsqueeze_": lambda: torch.randn(3, 2).unsqueeze_(1),
    "swapdims_": lambda: torch.randn(3, 2, 4).swapdims_(0, 2),
}
def embedding_bag_grad(mode, offsets=None, psw=None, padding_idx=None, by_freq=False, idx=None):
    idx = torch.tensor([1, 0, 3, 9, 2, 2, 3, 1]) if idx is None else idx
    offsets = torch.tensor([0, 3, 3, 5]) if offsets is None else offsets
    w = torch.randn(10, 4).requires_grad_()
    out = F.embedding_bag(idx, w, offsets, mode=mode, per_sample_weights=psw, padding_idx=padding_idx,
                          scale_grad_by_freq=by_freq)
    out.backward(torch.linspace(-1, 1, out.numel()).reshape(out.shape))


CASES["embedding_bag_backward_sum"] = lambda: embedding_bag_grad("sum")
CASES["embedding_bag_backward_mean_empty_bag"] = lambda: embedding_bag_grad("mean")
CASES["embedding_bag_backward_max"] = lambda: embedding_bag_grad("max")
CASES["embedding_bag_backward_sum_weights_padding"] = lambda: embedding_bag_grad(
    "sum", psw=torch.rand(8), padding_idx=2)
CASES["embedding_bag_backward_mean_padding_2d"] = lambda: embedding_bag_grad(
    "mean", offsets=None, padding_idx=0, idx=torch.tensor([1, 0, 3, 9, 0, 2, 2, 3, 1]))
CASES["embedding_bag_backward_sum_by_freq_distinct"] = lambda: embedding_bag_grad(
    "sum", by_freq=True, idx=torch.tensor([4, 1, 7, 2, 0, 9, 3, 5]))


def multilabel_grad(reduction, x, target):
    grad(lambda v: F.multilabel_margin_loss(v, target, reduction=reduction), x)


_ML_TARGET = torch.tensor([[3, 0, -1, 1, 2], [4, 4, 1, -1, 0], [0, 1, 2, 3, 4], [-1, 2, 3, 0, 0]])
CASES["multilabel_margin_loss_backward_mean"] = lambda: multilabel_grad("mean", torch.randn(4, 5), _ML_TARGET)
CASES["multilabel_margin_loss_backward_sum"] = lambda: multilabel_grad("sum", torch.randn(4, 5), _ML_TARGET)
CASES["multilabel_margin_loss_backward_none"] = lambda: multilabel_grad("none", torch.randn(4, 5), _ML_TARGET)
CASES["multilabel_margin_loss_backward_1d"] = lambda: multilabel_grad("mean", torch.randn(5),
                                                                       torch.tensor([2, 4, -1, 0, 0]))


def ctc_grad(reduction, input_lengths, target_lengths, zero_infinity=False, T=6, C=5, concatenated=False):
    N = len(input_lengths)
    targets = torch.randint(1, C, (N, max(target_lengths) if max(target_lengths) else 1))
    if concatenated:
        targets = torch.cat([targets[i, :target_lengths[i]] for i in range(N)])
    x = torch.randn(T, N, C).requires_grad_()
    loss = F.ctc_loss(x.log_softmax(2), targets, torch.tensor(input_lengths), torch.tensor(target_lengths),
                      reduction=reduction, zero_infinity=zero_infinity)
    loss.backward(torch.linspace(-1, 1, loss.numel()).reshape(loss.shape) if loss.dim() else None)


CASES["ctc_loss_backward_mean"] = lambda: ctc_grad("mean", [6, 6], [3, 2])
CASES["ctc_loss_backward_none_short_inputs"] = lambda: ctc_grad("none", [6, 4, 5], [3, 1, 2])
CASES["ctc_loss_backward_sum_repeats_empty"] = lambda: ctc_grad("sum", [6, 5, 3], [4, 0, 1], T=6, C=3)
CASES["ctc_loss_backward_zero_infinity"] = lambda: ctc_grad("sum", [2, 6], [4, 2], zero_infinity=True)
CASES["ctc_loss_backward_concatenated"] = lambda: ctc_grad("mean", [6, 5], [2, 3], concatenated=True)


def packed(batch_first, lengths, enforce_sorted=True):
    x = torch.randn(len(lengths), 5, 3) if batch_first else torch.randn(5, len(lengths), 3)
    nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lengths), batch_first=batch_first,
                                      enforce_sorted=enforce_sorted)


CASES["pack_padded_sequence"] = lambda: packed(False, [5, 3])
CASES["pack_padded_sequence_batch_first"] = lambda: packed(True, [4, 4, 1])
CASES["pack_padded_sequence_unsorted_short"] = lambda: packed(False, [2, 3, 1], enforce_sorted=False)
CASES["pack_padded_sequence_2d"] = lambda: nn.utils.rnn.pack_padded_sequence(torch.randn(4, 3), torch.tensor([4, 2, 2]))
CASES["poisson"] = lambda: (torch.poisson(torch.rand(4) * 3), torch.poisson(torch.tensor([[0.0, 12.5], [1.0, 40.0]])))

for w in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"):
    CASES[w] = (lambda w=w: (getattr(torch, w)(8), getattr(torch, w)(7, periodic=False),
                             getattr(torch, w)(6, dtype=torch.float64), getattr(torch, w)(1)))
CASES["hamming_window_alpha_beta"] = lambda: torch.hamming_window(9, False, 0.5, 0.3)
CASES["kaiser_window_beta"] = lambda: torch.kaiser_window(9, False, 5.0)
CASES["random_derived"] = lambda: (torch.empty(3, 4).exponential_(), torch.empty(5).cauchy_(),
                                   torch.empty(5).log_normal_(), torch.empty(2, 3).geometric_(0.3))



def mha(need_weights, padding):
    m = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 8)
    kpm = torch.tensor([[False] * 5, [False] * 3 + [True] * 2]) if padding else None
    with torch.no_grad():
        m(x, x, x, need_weights=need_weights, key_padding_mask=kpm)


CASES["native_multi_head_attention"] = lambda: mha(True, False)
CASES["native_multi_head_attention_no_weights_padding"] = lambda: mha(False, True)



def encoder_layer(**kw):
    m = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, **kw).eval()
    with torch.no_grad():
        m(torch.randn(2, 5, 8))


CASES["transformer_encoder_layer_fwd"] = lambda: encoder_layer()
CASES["transformer_encoder_layer_fwd_norm_first_gelu"] = lambda: encoder_layer(norm_first=True, activation="gelu")

# Tensor.unfold's gradient: overlapping windows (step < size), gaps (step > size), the last dimension.
CASES["unfold_backward_overlap"] = lambda: grad(lambda x: x.unfold(1, 3, 2), torch.randn(4, 9))
CASES["unfold_backward_gaps"] = lambda: grad(lambda x: x.unfold(0, 2, 3), torch.randn(8, 3))
CASES["unfold_backward_last"] = lambda: grad(lambda x: x.unfold(-1, 4, 1), torch.randn(2, 3, 6))

# grid_sampler_2d_backward (RAFT's training step): bilinear and nearest, zeros and border padding, with points outside
# the input; and the grid's gradient alone (output_mask [False, True]) when the input needs none.
def grid_grad(mode, padding, align, input_grad=True):
    x = torch.randn(2, 3, 5, 6).requires_grad_(input_grad)
    grid = (torch.rand(2, 4, 3, 2) * 2.4 - 1.2).requires_grad_()
    out = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)
    out.backward(torch.linspace(-1, 1, out.numel()).reshape(out.shape))


CASES["grid_sampler_2d_backward_bilinear_zeros"] = lambda: grid_grad("bilinear", "zeros", False)
CASES["grid_sampler_2d_backward_bilinear_border_align"] = lambda: grid_grad("bilinear", "border", True)
CASES["grid_sampler_2d_backward_nearest"] = lambda: grid_grad("nearest", "zeros", False)
CASES["grid_sampler_2d_backward_grid_only"] = lambda: grid_grad("bilinear", "zeros", True, input_grad=False)

CHECKED = {"_native_multi_head_attention", "_transformer_encoder_layer_fwd", "hardshrink_backward",
           "softshrink_backward", "prelu_backward", "rrelu_with_noise_backward", "elu_backward",
           "soft_margin_loss_backward", "multi_margin_loss_backward", "reflection_pad1d_backward",
           "reflection_pad2d_backward", "replication_pad2d_backward", "replication_pad3d_backward", "channel_shuffle",
           "native_channel_shuffle", "unsafe_split", "fractional_max_pool2d_backward",
           "fractional_max_pool3d_backward", "embedding_renorm_", "transpose_", "t_", "unsqueeze_", "hann_window",
           "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "exponential_", "cauchy_",
           "log_normal_", "geometric_", "_embedding_bag_dense_backward", "multilabel_margin_loss_backward",
           "_ctc_loss_backward", "_pack_padded_sequence", "poisson", "unfold_backward", "grid_sampler_2d_backward"}
# PyTorch 2.x dispatches other ops for some of the cases (run with the torch2 tier's python: ctest
# sweep_values_torch2): PReLU's gradient is _prelu_kernel_backward, EmbeddingBag's _embedding_bag_backward.
if int(torch.__version__.split(".")[0]) >= 2:
    CHECKED = (CHECKED - {"prelu_backward", "_embedding_bag_dense_backward"}) | {"_prelu_kernel_backward",
                                                                                 "_embedding_bag_backward"}


# PyTorch 2.x only: grouped-query attention on the CPU flash kernel (fewer key/value heads than query heads: Llama,
# Qwen2, Gemma), with a causal and an additive mask, and _grouped_mm in the layouts a Mixtral-style expert layer's
# forward and backward dispatch (2-d x 3-d, 2-d x 2-d, 3-d x 2-d, 3-d x 3-d).
def gqa(causal, kv_heads=2):
    q = torch.randn(2, 4, 5, 8).requires_grad_()
    k, v = torch.randn(2, kv_heads, 5, 8).requires_grad_(), torch.randn(2, kv_heads, 5, 8).requires_grad_()
    mask = None if causal else torch.randn(2, 1, 5, 5)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=True)
    out.backward(torch.linspace(-1, 1, out.numel()).reshape(out.shape))


def grouped_mm():
    offs = torch.tensor([3, 3, 8, 12], dtype=torch.int32)  # an empty group, rows up to the end
    x, w = torch.randn(12, 8).requires_grad_(), torch.randn(4, 8, 4).requires_grad_()
    y = torch._grouped_mm(x, w, offs=offs)
    y.backward(torch.linspace(-1, 1, y.numel()).reshape(y.shape))
    torch._grouped_mm(torch.randn(4, 3, 8), torch.randn(8, 12), offs=offs)
    torch._grouped_mm(torch.randn(4, 3, 8), torch.randn(4, 8, 4))


if hasattr(torch, "_grouped_mm"):
    CASES["sdpa_gqa_causal"] = lambda: gqa(True)
    CASES["sdpa_gqa_mask"] = lambda: gqa(False)
    CASES["sdpa_mqa_causal"] = lambda: gqa(True, kv_heads=1)
    CASES["grouped_mm"] = grouped_mm
    CHECKED |= {"_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward",
                "_grouped_mm"}

# The model zoos' lowering gaps (tests/torch2/zoo/zoo.md): torch._assert_async (timm gemma4_vit's pooler), gather with
# an empty index, and a boolean mask after full slices or beside an integer index (x[:, mask]; its nonzero coordinates).
def mask_index():
    x = torch.randn(2, 3, 4)
    m = torch.tensor([True, False, True])
    x[:, m]
    x[:, :, torch.tensor([False, True, True, False])]
    x[:, torch.rand(3, 4) > 0.5]
    torch.ops.aten.index.Tensor(x, [torch.tensor([1]), m])
    torch.ops.aten.index.Tensor(x, [None, m, torch.tensor(2)])


CASES["assert_async"] = lambda: torch._assert_async(torch.tensor(True))
CASES["gather_empty"] = lambda: (torch.gather(torch.randn(2, 0), 1, torch.zeros(2, 0, dtype=torch.long)),
                                 torch.gather(torch.randn(3, 4), 1, torch.zeros(3, 0, dtype=torch.long)))
CASES["index_mask_after_slice"] = mask_index
CHECKED |= {"_assert_async", "gather", "index"}


# nn.LSTM on the CPU with PyTorch 2.x: oneDNN's mkldnn_rnn_layer per layer and direction and its backward (timm's
# Sequencer): two bidirectional layers batch-first with a grad of the output and of h_n, one layer without biases
# and with a grad of c_n only.
def lstm(batch_first, bias, layers, bidirectional, grads):
    m = nn.LSTM(3, 4, num_layers=layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional)
    x = torch.randn(2, 5, 3).requires_grad_()
    out, (h, c) = m(x)
    ws = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
    loss = {"output_h": (out * ws).sum() + h.sum(), "c": (c * c).sum()}[grads]
    loss.backward()


if hasattr(torch.ops.aten, "mkldnn_rnn_layer"):
    CASES["lstm_bidirectional_two_layers"] = lambda: lstm(True, True, 2, True, "output_h")
    CASES["lstm_no_bias_grad_c"] = lambda: lstm(False, False, 1, False, "c")
    CHECKED |= {"mkldnn_rnn_layer", "mkldnn_rnn_layer_backward"}
# Cases whose calls take more input elements than the recorder's usual bound: the LSTM backward reads oneDNN's
# workspace (36864 bytes at these sizes), which the lowering ignores but the record holds.
MAX_INPUT_ELEMENTS = {"lstm_bidirectional_two_layers": 60000, "lstm_no_bias_grad_c": 60000}

RANDOM = {"exponential_", "cauchy_", "log_normal_", "geometric_", "poisson"}


def main():
    runner, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    entries = []
    for name, fn in sorted(CASES.items()):
        rec = gen_samples.Recorder(MAX_INPUT_ELEMENTS.get(name, 20000))
        error = None
        try:
            with rec:
                fn()
        except Exception as e:  # noqa: BLE001
            error = "%s: %s" % (type(e).__name__, e)
        for call in rec.calls:
            if call["op"].split("::")[-1] in RANDOM:
                call["random"] = True
        entries.append({"name": name, "samples": [{"dtype": "float32", "calls": rec.calls, "error": error}]})
    samples = os.path.join(work, "sweep_values.samples.json")
    results = os.path.join(work, "sweep_values.results.json")
    with open(samples, "w") as fh:
        json.dump({"format": "opprobe-conformance-samples", "version": 1, "torch_version": torch.__version__,
                   "per_dtype": 1, "seconds": 0, "entries": entries}, fh)
    subprocess.run([runner, samples, results], check=True)
    with open(results) as fh:
        res = json.load(fh)
    bad, seen = [], set()
    for e in res["entries"]:
        for s in e["samples"]:
            if s.get("error"):
                bad.append("%s: PyTorch raised %s" % (e["name"], s["error"]))
            for call in s["calls"]:
                op = call["op"].split("::")[-1].split(".")[0]
                if op not in CHECKED:
                    continue
                seen.add(op)
                if call["status"] != "match":
                    bad.append("%s: %s %s: %s" % (e["name"], call["op"], call["status"],
                                                     call.get("detail", "")))
    missing = sorted(CHECKED - seen - {"native_channel_shuffle", "channel_shuffle"} -
                     ({"channel_shuffle"} if "native_channel_shuffle" in seen else set()))
    for op in missing:
        bad.append("no case dispatched aten::%s" % op)
    print("sweep_values: %d cases, %d checked ops seen, %d problems" % (len(CASES), len(seen), len(bad)))
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
