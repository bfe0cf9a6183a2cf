# The model zoos' training steps (tests/torch2/zoo/zoo.py runs this under `opprobe capture`; docs/coverage-torch2.md
# "Model zoos"). Usage: PYTHON zoo_cases.py FAMILY [--shard K/N] [--only NAME,...] [--list]
# FAMILY: transformers (every architecture of the installed transformers with a causal LM, masked LM, seq2seq,
# sequence/image/audio classification, CTC or image-text head), timm (one small model of every timm family), diffusers
# (UNet2DConditionModel, AutoencoderKL, a DiT), torchvision (RAFT's training step). Each case builds its model from a
# small config with random weights (nothing is read from the hub) and runs one training step: forward with labels, the
# head's loss, backward, an SGD step. A case prints `CASE name ok`; one that raises prints `RAISED name: why`, and
# zoo.py fails on it unless a rule in EXCLUSIONS (below) says why that architecture cannot be built from a small config
# offline.
import inspect
import os
import re
import sys
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")

import torch  # noqa: E402

# Rules for the cases that cannot be built from a small config offline: (family, name regex, error regex, why). A
# raised case no rule matches is a failure of the sweep.
EXCLUSIONS = [
    ("transformers", ".", r"requires the \w+ library but it was not found",
     "its model class needs a compiled extension transformers does not install (LayoutLMv2: detectron2, not on "
     "PyPI; DiNAT: natten, built from source against the installed torch)"),
    ("transformers", "assistant$", r"inputs_embeds and shared_kv_states cannot be None",
     "a speculative-decoding drafter (Gemma 4's assistants): its forward reads the target model's embeddings and "
     "key/value states, it has no training step of its own"),
]

BATCH, SEQ = 2, 8

DERIVE = object()  # an OVERRIDES value: leave it to the config to derive (the default's value dropped before SMALL)

# Per-architecture config values (`key` or `sub_config.key`) set after SMALL, where the generic sizes break a relation
# the config's validator or the model code requires that no generic rule (sizes_that_follow) states. A top-level value
# is also given to the default config when its own validator rejects the default.
OVERRIDES = {
    # WavTokenizer: no projection around its quantizer; the image and audio codebooks' token ranges in the vocabulary
    "apertus1p5": {"audio_config.codebook_dim": 64, "image_token_id": 10, "audio_token_id": 11,
                   "image_token_offset": 16, "vision_config.codebook_size": 64, "audio_token_offset": 80,
                   "audio_config.codebook_size": 64},
    "mamba2": {"num_heads": 8},  # heads x head = expand x hidden
    "dory": {"layer_types": DERIVE, "num_hidden_layers": 4, "n_input_layers": 1, "n_recurrent_layers": 2,
             "n_output_layers": 1},  # their sum: the layers (the default's list pairs each with an MLP block)
    "esmc": {"num_key_value_heads": 4},
    # its sparse attention picks pools of keys: pools of 2, so that 8 positions make 4 of them (pools of 16 make
    # none: an empty selection, which no real sequence has)
    "glm5_next": {"text_config.index_kpool": 2},
    "fun_asr_nano": {"adaptor_config.intermediate_size": 16},  # the text hidden size // 4
    "gemma4_assistant": {"text_config.hidden_size_per_layer_input": 0, "text_config.vocab_size_per_layer_input": 0},
    "bamba": {"attn_layer_indices": [1]},  # the default has no attention layer (the masks need one)
    "granitemoehybrid": {"layer_types": ["linear_attention", "full_attention"]},
    "kolibri1_1": {"index_layers": DERIVE, "kv_source_layers": DERIVE},  # derived from its layer types
    "granite_speech5_ctc": {"encoder_config.num_key_value_heads": 4},  # its key and value have all the heads
    # multimodal rotary sections the model code defaults to (for its full head) when the config states none: for
    # the small rotary head (the cosine's width: 8, GLM-4.5V's 4)
    **{m: {"text_config.rope_parameters.mrope_section": [2, 3, 3]} for m in (
        "qwen2_vl", "qwen2_5_vl", "qwen2_5_omni_thinker", "paddleocr_vl", "glm4v", "glm46v", "glm_ocr", "glmga")},
    "glm4v_moe": {"text_config.rope_parameters.mrope_section": [1, 1, 2]},
    "ernie4_5_vl_moe": {"text_config.rope_parameters.mrope_section": [3, 3, 2]},  # (height, width, time: 22, 22, 20)
    "audio-spectrogram-transformer": {"max_length": 64, "num_mel_bins": 32},  # frames and mel bins in its input
    "reformer": {"is_decoder": True, "axial_pos_shape": [2, 4], "axial_pos_embds_dim": [32, 32]},  # 8 positions
    "squeezebert": {"embedding_size": 64},  # = hidden (no Conv1d between them)
    "mobilebert": {"true_hidden_size": DERIVE, "intra_bottleneck_size": 32, "embedding_size": 32},
    # its embeddings at the hidden width; no cache in its training step (the cache's state is not its mLSTM cells'
    # shape for a forward over the whole sequence)
    "xlstm": {"embedding_dim": 64, "use_cache": False},
    "layoutlmv3": {"coordinate_size": 10, "shape_size": 12},  # 4 coordinates and 2 shapes: the hidden size
    "marian": {"decoder_vocab_size": 256},
    "dbrx": {"attn_config.rope_theta": 10000.0, "attn_config.clip_qkv": 8.0},
    "step3p7": {"text_config.sliding_window": 4, "text_config.num_sliding_attention_heads": 4},
    # its sparse attention's indexer (sizes the default leaves None): a budget of 4 of the 8 positions, compressed
    # by 2 (the composite model's causal LM is built from the same text config)
    **{m: {"indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 16, "indexer_budget": 4,
           "indexer_compress_ratio": 2} for m in ("qwen4_exp_text", "qwen4_exp")},
    "cohere_compass": {"text_config.rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e4}}},
    "cohere_compass_text": {"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e4}}},
    "hunyuan_vl": {"text_config.rope_parameters.mrope_section": [2, 3, 3]},
    "deepseek_ocr2": {"text_config.mlp_layer_types": ["dense", "sparse"]},
    "perceiver": {"max_position_embeddings": 8, "d_latents": 64, "num_latents": 16},  # its MLM: one token a position
    "recurrent_gemma": {"num_hidden_layers": 3},  # its block pattern's third block is attention
    "jamba": {"attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 1},
    "lfm2_moe": {"layer_types": ["conv", "full_attention"]},
    "chameleon": {"vocabulary_map": {"<image>": 5}},
    "esm": {"vocab_size": 33}, "efficientnet": {"hidden_dim": 2560, "image_size": 64},
    "moonshine_streaming": {"num_key_value_heads": 4},
    "gemma3n": {"text_config.num_kv_shared_layers": 0}, "gemma3n_text": {"num_kv_shared_layers": 0},
    # its projector reads the timm tower's width from `model_args`, which the default (a ResNet-50 stand-in) leaves
    # None: the Perception Encoder tower it is trained with, made small by timm's own arguments
    "perception_lm": {"vision_config.architecture": "vit_pe_core_tiny_patch16_384",
                      "vision_config.model_args": {"embed_dim": 64, "depth": 2, "num_heads": 4, "img_size": 64}},
    # its projector's structure, which the default leaves to the checkpoint (None): the Window Q-Former's query and
    # window sides (1 of 2), one vision layer injected at the first text layer, the spatial groups' text layers
    "granite4_vision": {"downsample_rate": "1/2", "deepstack_layer_map": [[-1, 0]],
                        "spatial_target_layers": [0, 1, 0, 1]},
    # image tokens pooled from the patches by a whole kernel: the default's tower has 14 patches a side (224 / 16)
    # and 256 tokens (16 a side; the checkpoint's 896 pixels have 64); 49 tokens pool 2 x 2 patches. Its answers'
    # token ids (Gemma's "Yes" and "No", which the model code defaults to) in the small vocabulary.
    "shieldgemma2": {"mm_tokens_per_image": 49, "yes_token_index": 4, "no_token_index": 5},
    # its hashed n-gram embeddings: one table of 500002 rows per n-gram size (six); 256 rows each. No key/value
    # cache in its training step: the cache is built from the top config, which has no layer count (its encoder,
    # global transformer and decoder have their own)
    "blt": {"encoder_hash_byte_group_vocab": 256, "use_cache": False},
    # no cache in its training step: its recurrent cycles run the layers more times than the cache has layers
    "hrm_text": {"use_cache": False},

    # its audio padding token: the embedding's last row, after the text vocabulary and the 32 codebooks of 2049
    "kyutai_speech_to_text": {"audio_pad_token_id": 256 + 32 * 2049},
    "lilt": {"hidden_size": 96},  # its six layout embeddings split the hidden size (a multiple of 6)
    # its vision encoder's output projected to the text decoder's width (the default's 512 both)
    "pp_formulanet": {"vision_config.decoder_hidden_size": 64},
    # its hybrid layers share one attention block, tied across them: two hybrid layers (the small default's one
    # has nothing to tie to); that block's width and head (twice the hidden size) derived again
    "zamba": {"layers_block_type": ["linear_attention", "hybrid", "hybrid"], "num_hidden_layers": 3,
              "attention_hidden_size": DERIVE, "attention_head_dim": DERIVE},
    # sizes its config derives from the hidden size (the Mamba-2 head: expand x hidden / heads; the shared
    # attention block's width and head: twice the hidden size's; the hybrid layers' indices), derived again
    "zamba2": {k: DERIVE for k in ("mamba_headdim", "attention_hidden_size", "attention_head_dim", "kv_channels",
                                   "hybrid_layer_ids")},
    "molmo2": {"adapter_config.vision_feature_layer": [-1, -2]},  # layers of the (2-layer) vision encoder
}


def excluded(family, name, error):
    for fam, name_re, err_re, why in EXCLUSIONS:
        if fam == family and re.search(name_re, name) and re.search(err_re, error):
            return why
    return None


def sgd_step(model, loss):
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01)
    opt.zero_grad()
    loss.backward()
    opt.step()


def loss_of(out):
    """The head's loss when the model computed one, else the sum of its floating outputs."""
    loss = getattr(out, "loss", None) if not isinstance(out, (tuple, list)) else None
    if isinstance(out, dict) and loss is None:
        loss = out.get("loss")
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return loss if loss.dim() == 0 else loss.sum()
    tensors = []

    def walk(o):
        if isinstance(o, torch.Tensor):
            if o.requires_grad and o.is_floating_point():
                tensors.append(o)
        elif isinstance(o, (list, tuple)):
            for x in o:
                walk(x)
        elif isinstance(o, dict) or hasattr(o, "values"):
            for x in o.values():
                walk(x)
    walk(out)
    if not tensors:
        raise RuntimeError("the model returned no floating tensor that requires grad")
    return sum(t.float().pow(2).mean() for t in tensors)


# ---------------------------------------------------------------------------------------------- transformers
# The task heads, in the order a model's one training step picks its head (the first it has).
# (A speech encoder's CTC head before its audio classification head: CTC is how wav2vec2-like models are trained.)
TASKS = ["CAUSAL_LM", "MASKED_LM", "SEQ_TO_SEQ_CAUSAL_LM", "SPEECH_SEQ_2_SEQ", "SEQUENCE_CLASSIFICATION",
         "IMAGE_CLASSIFICATION", "CTC", "AUDIO_CLASSIFICATION", "IMAGE_TEXT_TO_TEXT"]

# Config attributes set small wherever a config (or one of its sub-configs) has them.
SMALL = {
    "hidden_size": 64, "d_model": 64, "n_embd": 64, "embed_dim": 64, "model_dim": 64, "hidden_dim": 64,
    "encoder_hidden_size": 64, "out_hidden_size": 64, "audio_hidden_size": 64, "text_hidden_size": 64,
    "vision_hidden_size": 64, "projection_dim": 32, "hidden_size_global": 64,
    "num_attention_heads": 4, "num_heads": 4, "n_head": 4, "n_heads": 4, "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "num_key_value_heads": 2, "num_kv_heads": 2, "multi_query_group_num": 2,
    "head_dim": 16, "d_kv": 16, "d_head": 16, "rotary_dim": 8, "attention_head_dim": 16, "kv_channels": 16,
    # multi-head latent attention (MiniCPM3, Mistral 4; DeepSeek-V2/V3 and Kimi need more than this): its own head
    # split and low ranks
    "index_head_dim": 16, "index_n_heads": 4, "index_num_heads": 2,  # sparse attention's indexers
    "n_group": 2, "num_expert_group": 2, "topk_group": 1,  # group-limited expert routing: 2 groups of the 4 experts
    "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16, "kv_lora_rank": 32, "q_lora_rank": 32,
    "mamba_d_state": 16,
    "intermediate_size": 128, "ffn_dim": 128, "d_ff": 128, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128,
    "n_inner": 128, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32, "expert_intermediate_size": 32,
    "num_hidden_layers": 2, "num_layers": 2, "n_layer": 2, "n_layers": 2, "encoder_layers": 2, "decoder_layers": 2,
    "num_decoder_layers": 2, "num_encoder_layers": 2,
    "num_local_experts": 4, "num_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "num_experts_per_token": 2, "moe_topk": 2,
    "vocab_size": 256, "max_position_embeddings": 512, "n_positions": 512,
}
# The other mixture-of-experts sizes a default may leave None (sizes_that_follow)
SMALL_MOE = {"top_k_experts": 2, "moe_intermediate_size": 32, "n_shared_experts": 1}
LAYER_COUNTS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
                "num_decoder_layers", "num_encoder_layers")
# Attributes a config derives from its sizes: left out, so that the config derives them again.
DERIVED = ("out_features", "out_indices", "stage_names")
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "sep_token_id", "cls_token_id", "mask_token_id",
             "decoder_start_token_id", "unk_token_id", "blank_token_id")


def shrink(d):
    """The config dict `d` (a config's to_dict(), sub-configs as dicts) with SMALL's sizes and token ids below the
    vocabulary; the config is then made anew from it, so that sizes derived in its constructor follow."""
    out = {}
    layers_before = {d[k] for k in LAYER_COUNTS if isinstance(d.get(k), int) and not isinstance(d.get(k), bool)}
    for key, value in d.items():
        if key in DERIVED:
            continue
        if isinstance(value, dict) and not any(isinstance(k, int) or str(k).isdigit() for k in value):
            value = shrink(value)
        elif key in SMALL and isinstance(value, int) and not isinstance(value, bool) and value > SMALL[key]:
            value = SMALL[key]
        elif key.startswith("cross_") and key[6:] in SMALL and isinstance(value, int) and \
                value > SMALL[key[6:]]:
            value = SMALL[key[6:]]  # a cross-attention's sizes (Dia's decoder: `cross_hidden_size`, the encoder's)
        elif key in SMALL and isinstance(value, list) and value and all(type(v) is int for v in value):
            # per stage (Swin's heads)
            value = [min(v, SMALL[key]) if key in LAYER_COUNTS else SMALL[key] for v in value]
        out[key] = value
    # Per-layer lists (layer_types, ...): one layer of each kind the full model has, in its order, and the layer
    # counts set to that many (at least SMALL's); per-layer dicts keep the layers that are left.
    per_layer = [k for k, v in out.items() if isinstance(v, list) and len(v) in layers_before and len(v) > 2]
    keep = None
    for k in per_layer:
        firsts = sorted({repr(x): i for i, x in reversed(list(enumerate(out[k])))}.values())
        keep = sorted(set(firsts) | set(range(2))) if keep is None else sorted(set(keep) | set(firsts))
    if keep is not None:
        for k in per_layer:
            out[k] = [out[k][i] for i in keep]
        for k in LAYER_COUNTS:
            if out.get(k) is not None and d.get(k) in layers_before and isinstance(out.get(k), int):
                out[k] = len(keep)
    n = max([v for k, v in out.items() if k in LAYER_COUNTS and isinstance(v, int)] or [0])
    for k, v in list(out.items()):
        if isinstance(v, dict) and v and all(str(x).isdigit() for x in v):
            # (a per-layer dict follows the layers kept: the layer's new index, its values made small too)
            if keep is not None:
                v = {type(x)(j): v[x] for j, old in enumerate(keep) for x in v if int(x) == old}
            elif n:
                v = {x: y for x, y in v.items() if int(x) < n}
            out[k] = {x: shrink(y) if isinstance(y, dict) else y for x, y in v.items()}
    sizes_that_follow(d, out)
    # Multimodal rotary sections (time, height, width) split (a part of) the rotary head: scaled with the head.
    rope = out.get("rope_parameters")
    old_head, new_head = rotary_head(d), rotary_head(out)
    if isinstance(rope, dict) and isinstance(rope.get("mrope_section"), list) and old_head and new_head:
        sec = rope["mrope_section"]
        want = sum(sec) * new_head // old_head
        if sum(sec) != want and want >= len(sec):
            scaled = [max(1, v * want // sum(sec)) for v in sec]
            scaled[0] += want - sum(scaled)
            out["rope_parameters"] = dict(rope, mrope_section=scaled)
    vocab = out.get("vocab_size")
    if isinstance(vocab, int):
        for key in TOKEN_IDS:
            cur = out.get(key)
            if isinstance(cur, int) and cur >= vocab:
                out[key] = min(vocab - 1, 3)
            elif isinstance(cur, list):
                out[key] = [min(v, vocab - 1) for v in cur]
    return out


def rotary_head(d):
    """The head size a config's rotary embedding covers (its rotary part's, else the head's)."""
    heads, hidden = d.get("num_attention_heads"), d.get("hidden_size")
    head = d.get("qk_rope_head_dim") or d.get("head_dim") or (
        hidden // heads if isinstance(heads, int) and isinstance(hidden, int) and heads else None)
    return head if isinstance(head, int) else None


def sizes_that_follow(before, out):
    """Sizes a config states apart but that must keep their relation to the ones SMALL set (the relations its
    validator or its model code requires), set from the small sizes in `out` (`before`: the default dict)."""
    nope, rope = out.get("qk_nope_head_dim"), out.get("qk_rope_head_dim")
    if isinstance(nope, int) and isinstance(rope, int):
        # multi-head latent attention: the rotary part's head is `head_dim` where the default had them equal, and
        # the query/key head is its two parts
        if before.get("head_dim") == before.get("qk_rope_head_dim") and "head_dim" in out:
            out["head_dim"] = rope
        elif before.get("head_dim") == before.get("qk_nope_head_dim", 0) + before.get("qk_rope_head_dim", 0):
            out["head_dim"] = nope + rope
        if "qk_head_dim" in out:
            out["qk_head_dim"] = nope + rope
    # Mamba-2 mixers (Bamba, Granite hybrid): heads x head = expand x hidden, where no size of its own (Falcon-H1's
    # mamba_d_ssm) states the mixer's width
    if isinstance(out.get("mamba_n_heads"), int) and isinstance(out.get("mamba_d_head"), int) and \
            out.get("mamba_d_ssm") is None and isinstance(out.get("hidden_size"), int):
        out["mamba_d_head"] = min(out["mamba_d_head"], 16)
        out["mamba_n_heads"] = out.get("mamba_expand", 2) * out["hidden_size"] // out["mamba_d_head"]
    # Widths the default sets equal to the hidden size stay so: OPT's word embeddings (no projection in and out
    # between them), PaliGemma's image features projected to the text's width (a multimodal model's placeholders are
    # replaced at the embeddings' width by features at the hidden width), Mimi's upsampling groups (one a channel)
    for key in ("word_embed_proj_dim", "projection_dim", "upsample_groups"):
        if key in out and before.get(key) == before.get("hidden_size") and isinstance(out.get("hidden_size"), int):
            out[key] = out["hidden_size"]
    # Gemma-style key/value sharing across all the layers (an assistant model's)
    if before.get("num_kv_shared_layers") == before.get("num_hidden_layers") and "num_kv_shared_layers" in out:
        out["num_kv_shared_layers"] = out.get("num_hidden_layers")
    # (multi-head latent attention's key and value come up from the latent per query head: no grouped query)
    if isinstance(out.get("kv_lora_rank"), int) and isinstance(out.get("num_key_value_heads"), int):
        out["num_key_value_heads"] = out.get("num_attention_heads", out["num_key_value_heads"])
    heads, hidden = out.get("num_attention_heads"), out.get("hidden_size")
    # Sizes the default leaves for the checkpoint to say (None) that the model code reads as sizes
    if "head_dim" in out and out["head_dim"] is None and isinstance(heads, int) and isinstance(hidden, int):
        out["head_dim"] = hidden // heads
    if "num_key_value_heads" in out and out["num_key_value_heads"] is None and isinstance(heads, int):
        out["num_key_value_heads"] = SMALL["num_key_value_heads"]
    # (a mixture of experts whose expert counts the default leaves None, with no switch that turns its experts off
    # (Gemma 4's `enable_moe_block`): SMALL's experts, 2 per token, one shared)
    counts = ("n_routed_experts", "num_experts", "num_local_experts")
    if any(k in out and out[k] is None for k in counts) and \
            not any(k.startswith("enable_moe") and v is False for k, v in out.items()):
        for k, v in dict(SMALL_MOE, **{k: SMALL[k] for k in counts}).items():
            if k in out and out[k] is None:
                out[k] = v
    if "num_experts_per_tok" in out and out["num_experts_per_tok"] is None and any(
            isinstance(out.get(k), int) for k in counts):
        out["num_experts_per_tok"] = SMALL["num_experts_per_tok"]
    return out


def set_path(d, path, value):
    keys = path.split(".")
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    if value is DERIVE:
        d.pop(keys[-1], None)
    else:
        d[keys[-1]] = value


def small_config(config_cls, case=None):
    """The architecture's default config class made small: SMALL's sizes, then the case's OVERRIDES."""
    over = OVERRIDES.get(case, {})
    try:
        d = config_cls().to_dict()
    except Exception:  # noqa: BLE001  a default its own validator rejects: built with the case's values
        kw = {}
        for path, value in over.items():
            if value is not DERIVE:
                set_path(kw, path, value)
        d = config_cls(**kw).to_dict()
    for path, value in over.items():
        if value is DERIVE:
            set_path(d, path, DERIVE)
    d = shrink(d)
    for path, value in over.items():
        set_path(d, path, value)
    d.pop("transformers_version", None)
    return config_cls.from_dict(d)


def transformers_cases():
    from transformers.models.auto import modeling_auto as ma
    cases = {}
    for task in TASKS:
        for model_type, cls_name in getattr(ma, "MODEL_FOR_%s_MAPPING_NAMES" % task).items():
            if model_type not in cases:  # (a mapping may name several classes: the first)
                cases[model_type] = (task, cls_name[0] if isinstance(cls_name, (tuple, list)) else cls_name)
    return {name: (lambda name=name, task=task, cls_name=cls_name: transformers_step(name, task, cls_name))
            for name, (task, cls_name) in sorted(cases.items())}


def config_value(cfg, key, default):
    """cfg.key, else the first of its sub-configs (vision_config, text_config, ...) that has it."""
    v = getattr(cfg, key, None)
    if v is not None:
        return v
    for sub in ("vision_config", "text_config", "audio_config", "encoder", "encoder_config"):
        v = getattr(getattr(cfg, sub, None), key, None)
        if v is not None:
            return v
    return default


# Speech encoders that read their features time-major ([batch, frames, features], as their feature extractors return
# them); the others (Whisper-like) read [batch, mel bins, frames]. FEATURE_WIDTH: a width the config does not state
# (Granite Speech 5 stacks 4 frames of its 80 mel bins).
TIME_MAJOR_FEATURES = {"canary", "cohere_asr", "granite_speech5_ctc", "lasr_ctc", "parakeet_ctc", "speech_to_text",
                       "wav2vec2-bert"}
FEATURE_WIDTH = {"granite_speech5_ctc": 320}


def transformers_inputs(model, cfg, task):
    g = torch.Generator().manual_seed(0)
    vocab = config_value(cfg, "vocab_size", 256)
    name = getattr(model, "main_input_name", "input_ids")
    kw = {}
    if name == "input_ids":
        ids = torch.randint(4, max(vocab, 8), (BATCH, SEQ), generator=g)
        kw["input_ids"] = ids
        if task in ("CAUSAL_LM", "MASKED_LM", "SEQ_TO_SEQ_CAUSAL_LM"):
            kw["labels"] = ids.clone()
    elif name == "pixel_values":
        ch = config_value(cfg, "num_channels", 3)
        size = config_value(cfg, "image_size", 64)
        size = size[0] if isinstance(size, (list, tuple)) else size
        kw["pixel_values"] = torch.randn(BATCH, ch, size, size, generator=g)
    elif name == "input_values":
        kw["input_values"] = torch.randn(BATCH, 4000, generator=g)
    elif name == "input_features":
        model_type = getattr(cfg, "model_type", "")
        width = FEATURE_WIDTH.get(model_type) or next(
            (v for v in (config_value(cfg, k, None) for k in ("num_mel_bins", "input_feat_per_channel",
                                                              "feature_projection_input_dim")) if v), 80)
        frames = 3000 if model_type.startswith("whisper") else 64
        kw["input_features"] = torch.randn(*((BATCH, frames, width) if model_type in TIME_MAJOR_FEATURES else
                                             (BATCH, width, frames)), generator=g)
        if model_type in TIME_MAJOR_FEATURES and "attention_mask" in inspect.signature(model.forward).parameters:
            kw["attention_mask"] = torch.ones(BATCH, frames, dtype=torch.long)  # (CTC's input lengths)
    elif name == "inputs" and getattr(cfg, "model_type", "") == "perceiver":
        kw["inputs"] = torch.randint(4, max(vocab, 8), (BATCH, SEQ), generator=g)  # Perceiver's MLM: token ids
        kw["labels"] = kw["inputs"].clone()
    elif name in ("flattened_patches", "state"):
        pass  # (PREPARE's flattened_patches; robot_policy's state)
    elif name == "inputs":  # an encoder-decoder's encoder input: the speech encoder's samples
        kw["inputs"] = torch.randn(BATCH, 4000, generator=g)
    else:
        raise RuntimeError("no input built for main_input_name %r" % name)
    params = inspect.signature(model.forward).parameters
    ids = torch.randint(4, max(vocab, 8), (BATCH, SEQ), generator=g)
    # An image- or speech-first model with a text side (captioning, image-text, encoder-decoder): its text, which
    # is also its labels.
    if name != "input_ids" and task in ("CAUSAL_LM", "SEQ_TO_SEQ_CAUSAL_LM", "IMAGE_TEXT_TO_TEXT") and \
            "input_ids" in params and "input_ids" not in kw:
        kw["input_ids"] = ids
    if name != "input_ids" and task in ("CAUSAL_LM", "SEQ_TO_SEQ_CAUSAL_LM", "IMAGE_TEXT_TO_TEXT") and \
            "labels" in params and "labels" not in kw:
        kw["labels"] = ids.clone()
    # The other inputs its forward requires (no default): token ids of another tower (a Q-Former's), images.
    for pname, p in params.items():
        if p.default is not p.empty or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or pname in kw:
            continue
        if pname.endswith("input_ids"):
            kw[pname] = ids.clone()
        elif pname == "pixel_values":
            size = config_value(cfg, "image_size", 64)
            size = size[0] if isinstance(size, (list, tuple)) else size
            kw[pname] = torch.randn(BATCH, config_value(cfg, "num_channels", 3), size, size, generator=g)
    if "actions" in params and isinstance(getattr(cfg, "chunk_size", None), int):
        robot_policy(model, cfg, kw, params, g)
    elif name == "pixel_values" and "input_ids" in kw:
        query_placeholders(model, cfg, kw, params)
    elif "image_attention_mask" in params and "pixel_values" in params and "pixel_values" not in kw:
        # cross-attended images (IDEFICS): one image per text, every token attending to it
        kw["pixel_values"] = images(cfg, g).unsqueeze(1)
        kw["image_attention_mask"] = torch.ones(BATCH, kw["input_ids"].shape[1], 1, dtype=torch.long)
    if name == "pixel_values" and "spatial_shapes" in params:
        # native-resolution patches (SigLIP 2's NaFlex): the image as a 4 x 4 grid of flattened patches, with its
        # grid and its patches' mask
        p = config_value(cfg, "patch_size", 16)
        kw["pixel_values"] = torch.randn(BATCH, 16, config_value(cfg, "num_channels", 3) * p * p, generator=g)
        kw["pixel_attention_mask"] = torch.ones(BATCH, 16, dtype=torch.long)
        kw["spatial_shapes"] = torch.tensor([[4, 4]] * BATCH)
    if task == "IMAGE_CLASSIFICATION" and name == "input_ids":
        # An image classifier that asks a language model about the image (ShieldGemma 2: yes or no to a policy): the
        # image and its placeholders in the prompt; its labels are its answers', held out of the forward (which
        # hands `labels` on to the language model as token labels) for the cross entropy of its answer logits.
        kw["pixel_values"] = images(cfg, g)
        query_placeholders(model, cfg, kw, params)
        kw[ANSWERS] = torch.randint(0, 2, (BATCH,), generator=g)
    elif task in ("SEQUENCE_CLASSIFICATION", "IMAGE_CLASSIFICATION", "AUDIO_CLASSIFICATION"):
        kw["labels"] = torch.randint(0, getattr(cfg, "num_labels", 2), (BATCH,), generator=g)
    elif task == "CTC":
        kw["labels"] = torch.randint(1, min(vocab, 32), (BATCH, 3), generator=g)
    elif task == "SPEECH_SEQ_2_SEQ" and "decoder_input_ids" not in params and "input_ids" in kw:
        # a decoder-only speech model (a language model whose audio, when given, fills placeholders in its text):
        # labels of its text's layout
        kw["labels"] = kw["input_ids"].clone()
    elif task == "SPEECH_SEQ_2_SEQ":
        kw["labels"] = torch.randint(4, min(vocab, 256), (BATCH, 4), generator=g)
    return kw


def images(cfg, g):
    """[batch, channels, size, size] at the config's (or its vision tower's) image size."""
    size = config_value(cfg, "image_size", 64)
    size = size[0] if isinstance(size, (list, tuple)) else size
    return torch.randn(BATCH, config_value(cfg, "num_channels", 3), size, size, generator=g)


# Query-token models (BLIP-2, InstructBLIP, InstructBLIP-Video, Kosmos-2, ShieldGemma 2): the image becomes a fixed
# number of tokens (`num_query_tokens`, Kosmos-2's `latent_query_num`, Gemma 3's `mm_tokens_per_image`; a video's per
# frame) that replace as many placeholders in the text: an `image_token_id` (`video_token_id`), the config's or, where
# the default leaves it to the processor (None) or past the small vocabulary, one the random text never draws (ids
# from 4 up); Kosmos-2 marks their positions instead (`image_embeds_position_mask`). Their labels are -100 (no loss
# on the image's positions). FRAMES: a video's.
FRAMES = 2
ANSWERS = "zoo_answer_labels"  # (transformers_inputs: the labels of a loss the driver computes from the logits)


def query_placeholders(model, cfg, kw, params):
    n = next((getattr(cfg, k) for k in ("num_query_tokens", "latent_query_num", "mm_tokens_per_image") if
              isinstance(getattr(cfg, k, None), int)), None)
    if n is None:
        return
    video = getattr(cfg, "video_token_id", None) is not None or (
        hasattr(cfg, "video_token_id") and not hasattr(cfg, "image_token_id"))
    if video:  # [batch, frames, channels, height, width]
        kw["pixel_values"] = torch.stack([kw["pixel_values"]] * FRAMES, 1)
        n *= FRAMES
    ids = kw["input_ids"]
    if "image_embeds_position_mask" in params:
        token = 3
        kw["image_embeds_position_mask"] = torch.cat([torch.ones(BATCH, n, dtype=torch.long),
                                                      torch.zeros_like(ids)], 1)
    else:
        key = "video_token_id" if video else "image_token_id"
        if getattr(cfg, key, None) is None or getattr(cfg, key) >= config_value(cfg, "vocab_size", 256):
            setattr(cfg, key, 3)
        token = getattr(cfg, key)
    kw["input_ids"] = torch.cat([torch.full((BATCH, n), token, dtype=ids.dtype), ids], 1)
    if "labels" in kw:
        kw["labels"] = torch.cat([torch.full((BATCH, n), -100, dtype=ids.dtype), kw["labels"]], 1)


def robot_policy(model, cfg, kw, params, g):
    """A vision-language-action policy (pi0, pi0.5): one camera's image, whose patches replace as many image tokens
    at the start of the text (the vision-language model's `image_token_id`, made an id of the small vocabulary),
    the robot's state where it reads one, and the chunk of actions its flow-matching loss predicts."""
    vlm = cfg.vlm_config
    vision = vlm.vision_config
    side = vision.image_size // vision.patch_size
    if vlm.image_token_id >= vlm.text_config.vocab_size:
        vlm.image_token_id = 3
    kw["pixel_values"] = images(vlm, g).unsqueeze(1)
    kw["pixel_attention_mask"] = torch.ones(BATCH, 1, dtype=torch.bool)
    ids = kw.get("input_ids", torch.randint(4, vlm.text_config.vocab_size, (BATCH, SEQ), generator=g))
    kw["input_ids"] = torch.cat([torch.full((BATCH, side * side), vlm.image_token_id, dtype=ids.dtype), ids], 1)
    kw.pop("labels", None)
    if "state" in params:
        kw["state"] = torch.randn(BATCH, cfg.max_state_dim, generator=g)
    kw["actions"] = torch.randn(BATCH, cfg.chunk_size, cfg.max_action_dim, generator=g)


def ast_features(model, kw):
    """The Audio Spectrogram Transformer reads [batch, frames, mel bins] (its config's max_length frames)."""
    c = model.config
    kw["input_values"] = torch.randn(BATCH, c.max_length, c.num_mel_bins, generator=torch.Generator().manual_seed(0))


def codebook_ids(model, kw):
    """MusicGen's decoder reads one row of token ids per codebook ([batch x codebooks, positions]); its labels are
    [batch, positions, codebooks]."""
    n, g = model.config.decoder.num_codebooks if hasattr(model.config, "decoder") else model.config.num_codebooks, \
        torch.Generator().manual_seed(0)
    ids = torch.randint(4, 64, (BATCH * n, SEQ), generator=g)
    kw["input_ids"] = ids
    kw["labels"] = ids.reshape(BATCH, n, SEQ).transpose(1, 2).contiguous()


def flattened_patches(model, kw):
    """Pix2Struct reads its image as patches: each row its patch's row and column, then its pixels."""
    g = torch.Generator().manual_seed(0)
    width = model.config.vision_config.patch_embed_hidden_size
    pos = torch.randint(0, 4, (BATCH, 16, 2), generator=g).float()
    kw["flattened_patches"] = torch.cat([pos, torch.randn(BATCH, 16, width, generator=g)], -1)
    kw["attention_mask"] = torch.ones(BATCH, 16)
    kw["labels"] = torch.randint(4, 64, (BATCH, SEQ), generator=g)


def dia_codebooks(model, kw):
    """Dia's decoder reads its audio codes as [batch, positions, channels] (one codebook a channel); its labels
    are one row per batch and channel ([batch x channels, positions])."""
    c = model.config.decoder_config
    codes = torch.randint(4, c.vocab_size, (BATCH, SEQ, c.num_channels), generator=torch.Generator().manual_seed(0))
    kw["decoder_input_ids"] = codes
    kw["labels"] = codes.transpose(1, 2).reshape(BATCH * c.num_channels, SEQ)


def kyutai_frames(model, kw):
    """Kyutai's speech-to-text reads each frame as its text token and one code per audio codebook ([batch, frames,
    1 + codebooks]); its labels are the text tokens ([batch, frames])."""
    c, g = model.config, torch.Generator().manual_seed(0)
    text = kw["input_ids"]
    codes = torch.randint(0, c.codebook_vocab_size - 1, (BATCH, text.shape[1], c.num_codebooks), generator=g)
    kw["input_ids"] = torch.cat([text.unsqueeze(-1), codes], -1)
    kw["labels"] = text.clone()


def streaming_audio(model, kw):
    """Voxtral Realtime adds its audio to the text token by token: each token's `downsample_factor` encoder frames,
    each two mel frames (its embedder's second convolution has stride 2)."""
    c = model.config
    frames = kw["input_ids"].shape[1] * c.downsample_factor * 2
    kw["input_features"] = torch.randn(BATCH, c.audio_config.num_mel_bins, frames,
                                       generator=torch.Generator().manual_seed(0))


# Per-architecture steps before the forward: a setting of the model's own, an input of the layout it takes.
PREPARE = {
    "xmod": lambda model, kw: model.set_default_language("en_XX"),  # its per-language adapters
    "audio-spectrogram-transformer": ast_features,
    "udop": lambda model, kw: kw.update(bbox=torch.rand(BATCH, SEQ, 4, generator=torch.Generator().manual_seed(0)),
                                        labels=kw["input_ids"].clone()),  # boxes (fractions of the page)
    "musicgen": codebook_ids, "musicgen_melody": codebook_ids,
    "pix2struct": flattened_patches,
    "voxtral_realtime": streaming_audio, "dia": dia_codebooks, "kyutai_speech_to_text": kyutai_frames,
    # Omnilingual ASR's CTC model reads its samples as one channel ([batch, 1, samples]); its CTC loss reads the
    # encoder's lengths from the samples' padding mask ([batch, samples])
    "omniasr_ctc": lambda model, kw: kw.update(input_values=kw["input_values"].unsqueeze(1),
                                               padding_mask=torch.ones(BATCH, kw["input_values"].shape[-1],
                                                                       dtype=torch.long)),
    # Molmo 2 requires each token's modality when training (its image tokens attend both ways): all text here
    "molmo2": lambda model, kw: kw.update(mm_token_type_ids=torch.zeros_like(kw["input_ids"])),
    # GIT captions an image: its loss reads the logits after the image's patch tokens, which it counts whether or not
    # an image is given
    "git": lambda model, kw: kw.update(pixel_values=images(model.config, torch.Generator().manual_seed(0))),
}


def transformers_step(model_type, task, cls_name):
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    cls = getattr(transformers, cls_name)
    # A head whose own config class is not the architecture's (a composite model's text-only causal LM, ...) is
    # built from that class's config.
    config_cls = getattr(cls, "config_class", None) or CONFIG_MAPPING[model_type]
    cfg = small_config(config_cls if not issubclass(CONFIG_MAPPING[model_type], config_cls) else
                       CONFIG_MAPPING[model_type], model_type)
    if getattr(cfg, "pad_token_id", None) is None:
        cfg.pad_token_id = 0
    if (task in ("SEQ_TO_SEQ_CAUSAL_LM", "SPEECH_SEQ_2_SEQ") or getattr(cfg, "is_encoder_decoder", False)) and \
            getattr(cfg, "decoder_start_token_id", None) is None:
        cfg.decoder_start_token_id = 0
    if task == "CTC" and getattr(cfg, "vocab_size", None) is None:  # a CTC head's alphabet, left to the user
        cfg.vocab_size = 32
    torch.manual_seed(0)
    model = cls(cfg)
    model.train()
    kw = transformers_inputs(model, model.config, task)
    if model_type in PREPARE:
        PREPARE[model_type](model, kw)
    answers = kw.pop(ANSWERS, None)
    try:
        out = model(**kw)
    except TypeError:
        kw.pop("labels", None)
        out = model(**kw)
    sgd_step(model, loss_of(out) if answers is None else torch.nn.functional.cross_entropy(out.logits, answers))


# ---------------------------------------------------------------------------------------------- timm
# One model of every timm family (module): its `test_*` model where it has one (timm's own tiny test models), else
# the one with the fewest parameters (counted on the meta device when listing, outside the capture), built with 10
# classes and random weights. Made small where timm allows it (timm_small, also outside the capture): two blocks
# (`depth=2`) for the models built from a block count, and a quarter (inputs of 448 and more) or half of the default
# input size (`img_size=` for the models whose position embeddings or windows are sized by it), each the first
# that builds and runs its forward (on the CPU, outside the capture); else the default.
def timm_smallest(module):
    import timm
    names = timm.list_models(module=module)
    tests = [n for n in names if n.startswith("test_")]
    if tests:
        return sorted(tests)[0]
    best = None
    for n in names:
        try:
            with torch.device("meta"):
                m = timm.create_model(n, pretrained=False, num_classes=10)
            count = sum(p.numel() for p in m.parameters())
        except Exception:  # noqa: BLE001  a model the meta device cannot build is not a candidate
            continue
        if best is None or count < best[0]:
            best = (count, n)
    return best[1] if best else sorted(names)[0]


def timm_small(name):
    """`name[:KEY=VALUE...]`: the model with the smallest of the sizes above its forward runs at."""
    import timm
    with torch.device("meta"):
        default = timm.create_model(name, pretrained=False, num_classes=10)
    c, h, w = default.pretrained_cfg.get("input_size", (3, 224, 224))
    sizes = ([h // 4] if h >= 448 else []) + [h // 2, h]
    tries = [dict(depth=2, img_size=s) for s in sizes] + [dict(img_size=s) for s in sizes] + \
        [dict(depth=2, input=s) for s in sizes] + [dict(input=s) for s in sizes]
    for kw in tries:
        kw = dict(kw)
        size = kw.pop("input", None) or kw["img_size"]
        try:  # (on the CPU, batch 1: the meta device does not check indices)
            m = timm.create_model(name, pretrained=False, num_classes=10, **kw).eval()
            with torch.no_grad():
                m(torch.randn(1, c, size, size * w // h))
        except Exception:  # noqa: BLE001  not a size this model takes
            continue
        return ":".join([name] + ["%s=%d" % kv for kv in sorted(kw.items())] + (["input=%d" % size]))
    return name


def timm_step(spec):
    import timm
    name, *kvs = spec.split(":")
    kw = {k: int(v) for k, v in (x.split("=") for x in kvs)}
    torch.manual_seed(0)
    size = kw.pop("input", None)
    model = timm.create_model(name, pretrained=False, num_classes=10, **kw)
    model.train()
    c, h, w = model.pretrained_cfg.get("input_size", (3, 224, 224))
    if size:
        h, w = size, size * w // h
    x = torch.randn(BATCH, c, h, w, generator=torch.Generator().manual_seed(0))
    out = model(x)
    if tuple(out.shape) == (BATCH, 10):
        loss = torch.nn.functional.cross_entropy(out, torch.tensor([1, 7][:BATCH]))
    else:  # an encoder without a classifier (an image tower's features): a loss on its features
        loss = out.float().pow(2).mean()
    sgd_step(model, loss)


# ---------------------------------------------------------------------------------------------- diffusers
def diffusers_unet():
    from diffusers import UNet2DConditionModel
    model = UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, norm_num_groups=16)
    g = torch.Generator().manual_seed(0)
    x, noise = torch.randn(BATCH, 4, 16, 16, generator=g), torch.randn(BATCH, 4, 16, 16, generator=g)
    states = torch.randn(BATCH, 7, 32, generator=g)
    pred = model(x, torch.tensor([10, 500][:BATCH]), encoder_hidden_states=states).sample
    sgd_step(model, torch.nn.functional.mse_loss(pred, noise))


def diffusers_vae():
    from diffusers import AutoencoderKL
    model = AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=(32, 64), layers_per_block=1,
                          down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                          up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), latent_channels=4,
                          norm_num_groups=16, sample_size=32)
    x = torch.randn(BATCH, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    out = model(x, sample_posterior=True, generator=torch.Generator().manual_seed(1))
    posterior = model.encode(x).latent_dist
    loss = torch.nn.functional.mse_loss(out.sample, x) + 1e-3 * posterior.kl().mean()
    sgd_step(model, loss)


def diffusers_dit():
    from diffusers import DiTTransformer2DModel
    model = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4,
                                  num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=10, norm_num_groups=16)
    g = torch.Generator().manual_seed(0)
    x, noise = torch.randn(BATCH, 4, 8, 8, generator=g), torch.randn(BATCH, 4, 8, 8, generator=g)
    pred = model(x, timestep=torch.tensor([3, 700][:BATCH]), class_labels=torch.tensor([1, 4][:BATCH])).sample
    sgd_step(model, torch.nn.functional.mse_loss(pred, noise))


def diffusers_cases():
    return {"UNet2DConditionModel": diffusers_unet, "AutoencoderKL": diffusers_vae,
            "DiTTransformer2DModel": diffusers_dit}


# ---------------------------------------------------------------------------------------------- torchvision
# The training step of torchvision's RAFT (optical flow): its correlation lookup is grid_sample, so the step
# dispatches grid_sampler_2d_backward (the eval sweep's vision_video family runs its forward only).
# RAFT needs 128x128 inputs (its correlation pyramid); one image pair.
def torchvision_raft():
    from torchvision.models.optical_flow import raft_small
    torch.manual_seed(0)
    model = raft_small(weights=None)
    model.train()
    g = torch.Generator().manual_seed(0)
    a, b, flow = torch.rand(1, 3, 128, 128, generator=g), torch.rand(1, 3, 128, 128, generator=g), \
        torch.randn(1, 2, 128, 128, generator=g)
    preds = model(a * 2 - 1, b * 2 - 1, num_flow_updates=2)
    loss = sum((0.8 ** (len(preds) - i - 1)) * (p - flow).abs().mean() for i, p in enumerate(preds))
    sgd_step(model, loss)


FAMILIES = {"transformers": transformers_cases, "timm": None, "diffusers": diffusers_cases,
            "torchvision": lambda: {"raft_small": torchvision_raft}}


def main():
    args = sys.argv[1:]
    if not args or args[0] not in FAMILIES:  # (timm's cases are made in main)
        sys.exit("usage: zoo_cases.py FAMILY [--shard K/N] [--only NAME,...] [--list]  (FAMILY: %s)" %
                 ", ".join(sorted(FAMILIES)))
    family = args[0]
    listing = "--list" in args
    if family == "timm":
        # A timm case is a family (module) with its smallest model: `--list` prints MODULE=MODEL after choosing it,
        # and the capture run is given those pairs by --only, so that no choosing runs under the capture.
        import timm
        cases = {m: None for m in timm.list_modules()}
        if "--only" in args:
            pairs = dict(p.split("=", 1) if "=" in p else (p, None) for p in args[args.index("--only") + 1].split(","))
            args[args.index("--only") + 1] = ",".join(pairs)
            cases = {m: (lambda m=m: timm_step(pairs[m] or timm_small(timm_smallest(m)))) for m in cases}
    else:
        cases = FAMILIES[family]()
    names = sorted(cases)
    if "--only" in args:
        want = args[args.index("--only") + 1].split(",")
        unknown = [w for w in want if w not in cases]
        if unknown:
            sys.exit("zoo_cases: no %s case named %s" % (family, ", ".join(unknown)))
        names = [n for n in names if n in want]
    if "--shard" in args:
        k, n = (int(x) for x in args[args.index("--shard") + 1].split("/"))
        names = names[k - 1::n]
    if listing:
        print("\n".join("%s=%s" % (n, timm_small(timm_smallest(n))) if family == "timm" else n for n in names))
        return 0
    ok = raised = 0
    for name in names:
        t0 = time.time()
        try:
            cases[name]()
            ok += 1
            print("CASE %s ok (%.1f s)" % (name, time.time() - t0), file=sys.stderr, flush=True)
        except Exception as e:  # noqa: BLE001  judged by zoo.py against EXCLUSIONS
            raised += 1
            msg = ("%s: %s" % (type(e).__name__, e)).replace("\n", " ")[:300]
            why = excluded(family, name, msg)
            print("%s %s: %s" % ("EXCLUDED" if why else "RAISED", name, why + " -- " + msg if why else msg),
                  file=sys.stderr, flush=True)
    print("ZOO %s ok=%d raised=%d" % (family, ok, raised), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
