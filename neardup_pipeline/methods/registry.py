"""The registry: the configured detection methods, built from a configuration's sections."""

from __future__ import annotations

from collections.abc import Callable

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.methods.anchors.method import anchors_method
from neardup_pipeline.methods.anchors.model import AnchorModel
from neardup_pipeline.methods.bag import BagMethod
from neardup_pipeline.methods.contract import Method
from neardup_pipeline.methods.minhash import MinhashMethod
from neardup_pipeline.methods.rarewords import RarewordsMethod
from neardup_pipeline.methods.reword import RewordRule
from neardup_pipeline.methods.simhash import SimhashMethod


def build_methods(
    config: NearDupConfig, anchors_model: AnchorModel | None = None,
) -> dict[str, Method]:
    """The configured methods, by name, in the order the configuration lists them (anchors:
    `anchors_model`, else the file its settings name)."""
    bag, minhash, rare = config.bag, config.minhash, config.rarewords
    factories: dict[str, Callable[[], Method]] = {
        "bag": lambda: BagMethod(
            threshold=bag.threshold, bands=bag.bands, max_words=bag.max_words,
            order_threshold=bag.order_threshold, subject_margin=bag.subject_margin,
            reword=RewordRule(bag.reword_max_changed, bag.reword_max_run)
            if bag.reword_max_changed else None,
            site_containment=bag.site_containment, site_order=bag.site_order,
            passage_sample=bag.passage_sample,
        ),
        # Beside the bag, simhash only verifies: a page within k bits shares nearly all its
        # words, so the bag's 64-bit band keys find it, while k + 1 blocks of 16 bits are
        # shared by chance by about 4 x pages / 65,536 others a lookup.
        "simhash": lambda: SimhashMethod(shingle=config.simhash.shingle, k=config.simhash.k,
                                          lookup_blocks=config.simhash.blocks,
                                          looks_up="bag" not in config.method_names),
        "minhash": lambda: MinhashMethod(
            threshold=minhash.threshold,
            exact=minhash.exact,
            containment_mode=minhash.mode == "containment",
            containment_threshold=minhash.containment_threshold,
            sample=minhash.containment_sample,
        ),
        "rarewords": lambda: RarewordsMethod(
            keys_per_doc=rare.keys,
            percentile=rare.percentile,
            max_words=rare.max_words,
            threshold=rare.threshold,
            warmup=rare.warmup,
        ),
        "anchors": lambda: anchors_method(config.anchors, config.text, anchors_model),
    }
    return {name: factories[name]() for name in config.method_names}
