"""Run in a subprocess (logical devices must be set before TensorFlow starts): a Keras fit under
MirroredStrategy on 2 logical CPU devices with KerasHook; prints JSON of what the test checks."""

import json
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras  # noqa: E402

import smdebug.tensorflow as smd  # noqa: E402

out, workers = sys.argv[1], sys.argv[2]
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.default_rng(0)
x = rng.standard_normal((64, 8)).astype("float32")
y = rng.integers(0, 3, 64)
with strategy.scope():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(4, activation="relu", name="dense"),
            keras.layers.Dense(3, name="dense_1"),
        ]
    )
    model.compile(keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
hook = smd.KerasHook(
    out,
    save_config=smd.SaveConfig(save_interval=1),
    include_workers=workers,
    include_collections=["weights", "gradients", "losses", "layers"],
)
before = [v.numpy() for v in model.trainable_weights]
model.fit(x, y, batch_size=32, epochs=1, shuffle=False, callbacks=[hook], verbose=0)
hook.close()
w0 = before[0]
b0 = before[1]
print(
    json.dumps(
        {
            "x0": x[:16].tolist(),
            "x1": x[16:32].tolist(),
            "out0": np.maximum(x[:16] @ w0 + b0, 0).tolist(),
            "out1": np.maximum(x[16:32] @ w0 + b0, 0).tolist(),
        }
    )
)
