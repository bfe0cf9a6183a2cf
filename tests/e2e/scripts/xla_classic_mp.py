# A PyTorch/XLA classic-API training script, written the way its users write them (multiprocessing with
# xmp.spawn, MpDeviceLoader, xm.optimizer_step, master_print, rendezvous, metrics); used by
# tests/e2e/standins_test.cpp.
import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def _mp_fn(index, flags):
  torch.manual_seed(1)
  device = xm.xla_device()
  dataset = torch.utils.data.TensorDataset(torch.randn(12, 8), torch.randint(0, 3, (12,)))
  sampler = torch.utils.data.distributed.DistributedSampler(
      dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
  loader = torch.utils.data.DataLoader(dataset, batch_size=flags.batch_size, sampler=sampler)
  train_loader = pl.MpDeviceLoader(loader, device)
  model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3)).to(device)
  optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3 * xm.xrt_world_size())
  loss_fn = nn.CrossEntropyLoss()
  for step, (data, target) in enumerate(train_loader):
    optimizer.zero_grad()
    loss = loss_fn(model(data), target)
    loss.backward()
    xm.optimizer_step(optimizer)
    if step % 2 == 0:
      xm.master_print("step {} ordinal {} loss {}".format(step, xm.get_ordinal(), loss.item()))
  mean = xm.all_reduce(xm.REDUCE_SUM, loss, scale=1.0 / xm.xrt_world_size())
  xm.rendezvous("done")
  if xm.is_master_ordinal():
    xm.save(model.state_dict(), flags.out)
  print(met.short_metrics_report(), mean.shape)


if __name__ == "__main__":
  parser = argparse.ArgumentParser()
  parser.add_argument("--batch_size", type=int, default=4)
  parser.add_argument("--out", default="/dev/null")
  xmp.spawn(_mp_fn, args=(parser.parse_args(),))
