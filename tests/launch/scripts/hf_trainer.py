"""An unmodified Hugging Face training script (no smdebug import), for `smdebug run`'s tests: a tiny
BERT built from a config (nothing downloaded), its loss computed inside the model (a new
``CrossEntropyLoss`` at each forward call) and returned as ``output.loss``; ``Trainer`` trains
10 epochs of 4 steps (40 optimizer steps) and evaluates after each epoch (one batch).
The Trainer's log history is written as JSON to the path given as the first argument.
"""

import json
import sys
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integrations"))
from hf_rows import Rows  # noqa: E402  (tests/integrations/hf_rows.py)


def main():
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
    args = transformers.TrainingArguments(
        output_dir=str(Path(sys.argv[1]).parent / "hf-out"),
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        num_train_epochs=10,
        logging_steps=1,
        eval_strategy="epoch",
        learning_rate=0.1,
        optim="sgd",
        lr_scheduler_type="constant",
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=0,
    )
    trainer = transformers.Trainer(
        model=transformers.BertForSequenceClassification(config),
        args=args,
        train_dataset=Rows(16, 1),
        eval_dataset=Rows(4, 2),
    )
    trainer.train()
    Path(sys.argv[1]).write_text(json.dumps(trainer.state.log_history))


if __name__ == "__main__":
    main()
