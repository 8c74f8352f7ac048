"""An unmodified MXNet Gluon training loop (SoftmaxCrossEntropyLoss).
--explicit: the same hooked by hand from the job's hook JSON (the reference for names)."""

import argparse

import mxnet as mx
from mxnet import autograd, gluon, nd

p = argparse.ArgumentParser()
p.add_argument("--explicit", action="store_true")
args = p.parse_args()
mx.random.seed(0)
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(8, activation="relu"), gluon.nn.Dense(3))
net.initialize(mx.init.Xavier())
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
if args.explicit:
    import smdebug.mxnet as smd

    hook = smd.Hook.create_from_json_file()
    hook.register_block(net)
    hook.register_block(loss_fn)
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
x = nd.random.normal(shape=(16, 4))
y = nd.array([i % 3 for i in range(16)])
for _step in range(4):
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(16)
