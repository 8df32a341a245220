"""DefectNet: the demo's part-crop defect classifier (5 logits).

Input: a padded part crop area-resized to 96x96 RGB (see defect_crops.py).
3x3 conv+BN+ReLU blocks with max-pooling down to 6x6, global average pool,
linear. Kept in its own file so quantize.py can build it (--module) with
the shipped file's parameters (--weights-from).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def cbr(cin, cout, stride=1):
    return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True)]


class DefectNet(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.features = nn.Sequential(
            *cbr(3, 16, 2),                         # 48x48
            *cbr(16, 32), nn.MaxPool2d(2),          # 24x24
            *cbr(32, 48), nn.MaxPool2d(2),          # 12x12
            *cbr(48, 64), nn.MaxPool2d(2),          # 6x6
            *cbr(64, 96))
        self.head = nn.Linear(96, classes)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))
