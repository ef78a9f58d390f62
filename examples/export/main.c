/* Runs the exported MNIST CNN (examples/export/mnist_cnn.py, exported as `mnist` for x86):
 *   cc examples/export/main.c -Ibuild/mnist build/mnist/mnist.o -lpthread -lm -o mnist
 *   ./mnist [threads]
 * Draws a vertical bar as the "digit", runs the program, prints the class probabilities. */
#include <stdio.h>
#include <stdlib.h>
#include "mnist.h"

int main(int argc, char **argv) {
  static float image[mnist_IN0_ELEMENTS], probs[mnist_OUT0_ELEMENTS];
  for (int y = 4; y < 24; y++)
    for (int x = 12; x < 16; x++) image[y * 28 + x] = 1.0f;
  if (argc > 1) mnist_set_threads(atoi(argv[1]));
  if (mnist(image, probs) != 0) {
    fprintf(stderr, "%s\n", mnist_error());
    return 1;
  }
  int best = 0;
  for (int k = 0; k < mnist_OUT0_ELEMENTS; k++) {
    printf("class %d: %.6f\n", k, probs[k]);
    if (probs[k] > probs[best]) best = k;
  }
  printf("argmax: %d\n", best);
  return 0;
}
