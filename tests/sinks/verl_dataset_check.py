"""Load a verl export with verl's own ``RLHFDataset`` and print what its rows give (run by a test).

Runs with ``var/verl`` (see infra/install.sh) first on ``sys.path``, in its own process.

    python tests/sinks/verl_dataset_check.py var/exports/verl/train.parquet
"""

from __future__ import annotations

import json
import sys
import tempfile

from omegaconf import OmegaConf
from verl.utils.dataset.rl_dataset import RLHFDataset

from trainers.config import TinyModelConfig
from trainers.tiny_model import build_tiny


def main(parquet: str) -> None:
    _, tok = build_tiny(TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1))
    config = OmegaConf.create(
        {
            "prompt_key": "prompt",
            "max_prompt_length": 256,
            "filter_overlong_prompts": True,
            "filter_overlong_prompts_workers": 1,
            "cache_dir": tempfile.mkdtemp(),
        }
    )
    dataset = RLHFDataset(data_files=[parquet], tokenizer=tok, config=config)
    items = [dataset[i] for i in range(len(dataset))]
    print(
        json.dumps(
            [
                {
                    "raw_prompt": item["raw_prompt"],
                    "data_source": item["data_source"],
                    "reward_model": item["reward_model"],
                    "extra_info": item["extra_info"],
                    "index": item.get("index"),
                }
                for item in items
            ],
            default=str,
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
