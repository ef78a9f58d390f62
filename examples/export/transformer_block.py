"""A small pre-norm transformer block (causal self-attention and an MLP, LayerNorm, residuals)
to export with kcc, e.g. for AMD (the HSACO and a HIP launcher) or CUDA:

    kcc tinygrad-export examples/export/transformer_block.py:block --input 1x16x64:float32 \
        -t amd -o build/block_amd --name block
    kcc run build/block_amd/block.json x.npy -o out/ --emulate      # kcc's AMD emulator
"""

from tinygrad import Tensor, nn

Tensor.manual_seed(0)
D, HEADS = 64, 4
ln1, ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
qkv, proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
up, down = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)


def block(x: Tensor) -> Tensor:
    """x: (batch, time, D) → the same shape."""
    b, t, _ = x.shape
    q, k, v = qkv(ln1(x)).reshape(b, t, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
    a = q.scaled_dot_product_attention(k, v, is_causal=True)
    x = x + proj(a.transpose(1, 2).reshape(b, t, D))
    return x + down(up(ln2(x)).gelu())
