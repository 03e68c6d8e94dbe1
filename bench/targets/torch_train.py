"""Bench target (c): PyTorch CPU training loop (small MLP, SGD) fed by a
DataLoader with num_workers=2 whose dataset makes random tensors with a
little CPU work.  Counts optimizer steps.

usage: torch_train.py PROGRESS_FILE
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _progress import die_with_parent, start_reporter  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

FEATURES = 128


class RandomSet(Dataset):
    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        x = torch.randn(FEATURES)
        for _ in range(4):  # a little CPU work per item
            x = torch.tanh(x * 1.01 + 0.1)
        y = torch.tensor(float(x.sum() > 0))
        return x, y


def main():
    die_with_parent()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    state = [0]
    model = nn.Sequential(nn.Linear(FEATURES, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.BCEWithLogitsLoss()
    loader = DataLoader(RandomSet(), batch_size=32, num_workers=2, worker_init_fn=lambda _: die_with_parent())
    start_reporter(sys.argv[1], state)
    n = 0
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(model(x).squeeze(1), y)
        loss.backward()
        opt.step()
        n += 1
        state[0] = n


if __name__ == "__main__":
    main()
