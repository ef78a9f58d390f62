"""An MNIST-size CNN (1x28x28 → 10 class probabilities) to export with kcc:

    kcc tinygrad-export examples/export/mnist_cnn.py:net --input 1x1x28x28:float32 \
        -t x86 -o build/mnist --name mnist
    cc examples/export/main.c -Ibuild/mnist build/mnist/mnist.o -lpthread -lm -o mnist

The weights are random (seeded): the point is the program, not the accuracy.
"""

from tinygrad import Tensor, nn

Tensor.manual_seed(0)
conv1, conv2 = nn.Conv2d(1, 8, 3), nn.Conv2d(8, 16, 3)
bn1 = nn.BatchNorm(8)
fc = nn.Linear(16 * 5 * 5, 10)


def net(x: Tensor) -> Tensor:
    """Two conv + pool stages (the first with BatchNorm, in eval), a linear layer, softmax."""
    x = bn1(conv1(x)).relu().max_pool2d(2)       # 8x13x13
    x = conv2(x).relu().max_pool2d(2)            # 16x5x5
    return fc(x.flatten(1)).softmax()
