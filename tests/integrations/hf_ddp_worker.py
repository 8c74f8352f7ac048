"""One rank of a Hugging Face ``Trainer.train`` under the Trainer's own DDP (2 CPU processes on
gloo, started by torchrun from test_huggingface_ddp.py) with SMDebugCallback: a tiny BERT built from
a config (nothing is downloaded), gradient accumulation, an evaluation during training. Each rank
writes what its Trainer logged and counted to RESULT_DIR/rank<r>.json.

usage: torchrun --nproc_per_node 2 hf_ddp_worker.py OUT_DIR one|all RESULT_DIR
"""

import json
import os
import sys

import torch
import transformers

import smdebug.pytorch as smd
from smdebug.integrations.huggingface import SMDebugCallback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch", "scripts"))
from gloo_exit import end_gloo  # noqa: E402
from hf_rows import Rows  # noqa: E402  (this script's folder is on sys.path: it is run by path)

LR = 0.1


def main():
    out_dir, workers, result_dir = sys.argv[1:4]
    torch.set_num_threads(1)
    # the hook is made before the Trainer starts torch.distributed, as a training script would
    hook = smd.Hook(
        out_dir=out_dir,
        save_config=smd.SaveConfig(save_interval=1),
        include_workers=workers,
        include_collections=["weights", "gradients"],
    )
    args = transformers.TrainingArguments(
        output_dir=os.path.join(result_dir, "hf"),
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        gradient_accumulation_steps=2,
        max_steps=4,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=2,
        learning_rate=LR,
        optim="sgd",
        lr_scheduler_type="constant",
        max_grad_norm=0.0,
        weight_decay=0.0,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        ddp_backend="gloo",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=0,
    )
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=2,
    )
    model = transformers.BertForSequenceClassification(config)
    trainer = transformers.Trainer(
        model=model, args=args, train_dataset=Rows(32, 1), eval_dataset=Rows(16, 2), callbacks=[SMDebugCallback(hook)]
    )
    trainer.train()
    hook.close()
    rank = torch.distributed.get_rank()
    with open(os.path.join(result_dir, f"rank{rank}.json"), "w") as f:
        json.dump(
            {
                "world": torch.distributed.get_world_size(),
                "global_step": trainer.state.global_step,
                "ddp": type(trainer.model_wrapped).__name__,
                "log_history": trainer.state.log_history,
            },
            f,
        )
    end_gloo()  # see tests/launch/scripts/gloo_exit.py: torch 2.13's gloo can abort a rank at exit otherwise


if __name__ == "__main__":
    main()
