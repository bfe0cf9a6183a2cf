# One AdamW training step of a small Hugging Face GPT-2 (transformers, built from its config: random weights, nothing
# downloaded) on a batch of random token ids, on the CPU: the Hugging Face step `scripts/bench suggest` captures (once,
# into build/bench/) and analyzes. Needs the zoo environment (requirements/zoo.txt: transformers).
import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=1000, n_positions=64)
    model = GPT2LMHeadModel(config)
    model.train()
    ids = torch.randint(0, config.vocab_size, (2, 32))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    optimizer.zero_grad()
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()


if __name__ == "__main__":
    main()
