"""A training loop with evaluation."""

from typing import Callable, Iterable

import torch

from tinytrain.prefetch import Prefetcher


class Trainer:
    """Trains ``model`` with ``optimizer`` on ``device``, a classifier's loss by default."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, device: torch.device,
                 loss_fn: Callable = torch.nn.functional.cross_entropy) -> None:
        self.model = model.to(device)
        self.optimizer = optimizer
        self.device = torch.device(device)
        self.loss_fn = loss_fn

    def train_step(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """One optimizer step; returns the loss, on the device (reading it waits for the step)."""
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(inputs), targets)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def fit(self, batches: Iterable, epochs: int = 1) -> list[float]:
        """Trains on CPU ``batches`` (prefetched to the device); the mean loss of each epoch."""
        history = []
        for _ in range(epochs):
            total, count = torch.zeros((), device=self.device), 0
            for inputs, targets in Prefetcher(batches, self.device):
                total += self.train_step(inputs, targets)
                count += 1
            history.append(total.item() / max(count, 1))  # one wait per epoch
        return history

    @torch.no_grad()
    def evaluate(self, batches: Iterable, num_classes: int) -> dict:
        """Accuracy and how often each class was predicted, over CPU ``batches``."""
        self.model.eval()
        correct = torch.zeros((), dtype=torch.long, device=self.device)
        predicted = torch.zeros(num_classes, dtype=torch.long, device=self.device)
        seen = 0
        for inputs, targets in Prefetcher(batches, self.device):
            guess = self.model(inputs).argmax(dim=1)
            correct += (guess == targets).sum()
            predicted += torch.bincount(guess, minlength=num_classes)
            seen += targets.numel()
        return {"accuracy": correct.item() / max(seen, 1), "predicted": predicted.tolist()}
