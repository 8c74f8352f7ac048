"""An unmodified Keras 3 script: fit with validation data, then evaluate.
--explicit: the same with a KerasHook made from the job's hook JSON (the reference for names)."""

import argparse

import keras
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--explicit", action="store_true")
args = p.parse_args()
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = (x[:, 0] > 0).astype("float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
callbacks = None
if args.explicit:
    import smdebug.tensorflow as smd

    callbacks = [smd.KerasHook.create_from_json_file()]
model.fit(x[:48], y[:48], validation_data=(x[48:], y[48:]), epochs=2, batch_size=16, verbose=0, callbacks=callbacks)
model.evaluate(x[48:], y[48:], batch_size=16, verbose=0, callbacks=callbacks)
