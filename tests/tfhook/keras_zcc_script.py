"""An unmodified Keras 3 script, for ``smdebug run`` on any backend: fit with validation data,
then the first layer's kernel as Keras has it, to ``argv[1]`` (.npy)."""

import sys

import keras
import numpy as np

x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = (x[:, 0] > 0).astype("float32")
model = keras.Sequential(
    [keras.Input((4,)), keras.layers.Dense(8, activation="relu", name="dense"), keras.layers.Dense(1, name="dense_1")]
)
model.compile(optimizer="sgd", loss="mse")
model.fit(x[:48], y[:48], validation_data=(x[48:], y[48:]), epochs=2, batch_size=16, verbose=0)
np.save(sys.argv[1], keras.ops.convert_to_numpy(model.get_layer("dense").kernel))
