"""PartAnomaly: the demo's PaDiM-style anomaly model for one part crop.

Input: a padded part crop area-resized to 96x96 RGB, ImageNet mean/std (the
defect classifier's input, defect_crops.py). Features at three scales from
the first three blocks of the demo defect classifier's backbone (strides 2,
4 and 8: 32, 48 and 64 channels), average-pooled to the coarsest grid
(12x12) and concatenated (144 channels), of which a fixed random subset of
`d` channels is kept (PaDiM's random dimensionality reduction).

Per grid position and per part outline (SHAPES in anomaly_crops.py: washer,
rectangular bracket, L bracket, mirrored L bracket -- a per-position
Gaussian cannot describe four outlines at once) a Gaussian fitted on good
crops: mean and inverse covariance (covariance + eps*I). The map is the
Mahalanobis distance (square root, as anomalib's PaDiM) under the outline
whose mean distance over the crop is least (a defect moves the mean little,
so it does not choose the outline); it is upsampled bilinearly to the crop
size and smoothed with anomalib's Gaussian blur (sigma 4, kernel 33,
reflect padding). Score = the map's maximum.

forward() returns anomalib's names: {"anomaly_map": [N,1,96,96],
"pred_score": [N]} (raw values; the sidecar's thresholds and min/max
normalise them).
"""
from typing import Dict

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZE = 96
GRID = 12
TAPS = (6, 10, 14)   # DefectNet.features[0:6], [6:10], [10:14]: 32@48, 48@24, 64@12
SIGMA = 4.0          # anomalib PaDiM's blur


def blur_kernel(sigma=SIGMA):
    k = 2 * int(4.0 * sigma + 0.5) + 1
    x = torch.arange(k, dtype=torch.float64) - k // 2
    g = torch.exp(-x * x / (2 * sigma * sigma))
    return (g / g.sum()).float()


class PartAnomaly(nn.Module):
    def __init__(self, features, channels, means, inv_covs):
        """features: DefectNet.features (its first 14 modules are used);
        channels: [d] kept channel indices; means: [K, d, GRID*GRID];
        inv_covs: [K, GRID*GRID, d, d]."""
        super().__init__()
        self.stage1 = nn.Sequential(*features[:TAPS[0]])
        self.stage2 = nn.Sequential(*features[TAPS[0]:TAPS[1]])
        self.stage3 = nn.Sequential(*features[TAPS[1]:TAPS[2]])
        self.register_buffer("channels", channels.long())
        self.register_buffer("means", means.float())
        self.register_buffer("inv_covs", inv_covs.float())
        g = blur_kernel()
        self.register_buffer("blur_x", g.view(1, 1, 1, -1))
        self.register_buffer("blur_y", g.view(1, 1, -1, 1))
        self.pad = g.numel() // 2
        self.grid = GRID
        self.size = SIZE

    def embedding(self, x):
        f1 = self.stage1(x)
        f2 = self.stage2(f1)
        f3 = self.stage3(f2)
        e = torch.cat([F.avg_pool2d(f1, 4), F.avg_pool2d(f2, 2), f3], 1)
        return torch.index_select(e, 1, self.channels)

    def distances(self, e):
        """[N, d, G, G] -> [K, N, G*G] Mahalanobis distances."""
        n = e.shape[0]
        delta = (e.reshape(1, n, e.shape[1], -1) - self.means.unsqueeze(1)).permute(0, 3, 1, 2)
        d2 = (torch.matmul(delta, self.inv_covs) * delta).sum(3)   # [K, P, N]
        return d2.clamp(min=0).sqrt().permute(0, 2, 1)

    def forward(self, x) -> Dict[str, torch.Tensor]:
        # Checked first: the Gaussians fit a 12x12 grid of 96x96 crops, and a
        # frozen graph given another size crashes libtorch 1.13 (SIGSEGV)
        # instead of raising.
        if x.dim() != 4 or x.shape[1] != 3 or x.shape[2] != self.size or x.shape[3] != self.size:
            raise ValueError("part_anomaly takes [N, 3, 96, 96] crops")
        dist = self.distances(self.embedding(x))                   # [K, N, P]
        outline = dist.mean(2).argmin(0)                           # [N]
        index = outline.view(1, -1, 1).expand(1, dist.shape[1], dist.shape[2])
        grid = dist.gather(0, index).view(-1, 1, self.grid, self.grid)
        m = F.interpolate(grid, size=[self.size, self.size], mode="bilinear", align_corners=False)
        m = F.conv2d(F.pad(m, [self.pad, self.pad, 0, 0], mode="reflect"), self.blur_x)
        m = F.conv2d(F.pad(m, [0, 0, self.pad, self.pad], mode="reflect"), self.blur_y)
        return {"anomaly_map": m, "pred_score": m.flatten(1).amax(1)}
