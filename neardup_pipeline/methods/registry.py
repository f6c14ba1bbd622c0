"""The registry: the configured detection methods, built from a configuration."""

from __future__ import annotations

from collections.abc import Callable

from neardup_pipeline.config import NearDupConfig
from neardup_pipeline.errors import ConfigError, IdfTableError
from neardup_pipeline.methods.anchors.method import anchors_method
from neardup_pipeline.methods.anchors.model import AnchorModel
from neardup_pipeline.methods.bag import BagMethod
from neardup_pipeline.methods.contract import Method
from neardup_pipeline.methods.idf import IdfTable
from neardup_pipeline.methods.minhash import MinhashMethod
from neardup_pipeline.methods.rarewords import RarewordsMethod
from neardup_pipeline.methods.reword import RewordRule
from neardup_pipeline.methods.simhash import SimhashMethod
from neardup_pipeline.sketch.shingles import ShingleHasher
from neardup_pipeline.text.normalize import Normalizer


def build_methods(
    config: NearDupConfig,
    anchors_model: AnchorModel | None = None,
    idf_table: IdfTable | None = None,
) -> dict[str, Method]:
    """The configured methods, by name, in the order the configuration lists them (anchors:
    `anchors_model`, else the file config.anchors_model names; simhash idf weighting:
    `idf_table`, else the file config.simhash_idf_model names)."""
    factories: dict[str, Callable[[], Method]] = {
        "bag": lambda: BagMethod(
            threshold=config.bag_threshold, bands=config.bag_bands,
            max_words=config.bag_max_words, order_threshold=config.bag_order_threshold,
            topic_shift=config.bag_topic_shift, subject_margin=config.bag_subject_margin,
            reword=RewordRule(config.bag_reword_max_changed, config.bag_reword_max_run)
            if config.bag_reword_max_changed else None,
        ),
        "simhash": lambda: SimhashMethod(
            shingle=config.simhash_shingle, k=config.simhash_k, blocks=config.simhash_blocks,
            weighting=config.simhash_weighting,
            idf=simhash_idf_table(config, idf_table) if config.simhash_weighting == "idf"
            else None,
        ),
        "minhash": lambda: MinhashMethod(
            shingle=config.minhash_shingle,
            hashes=config.minhash_hashes,
            supers=config.minhash_supers,
            threshold=config.minhash_threshold,
            exact=config.minhash_exact,
            containment_mode=config.mode == "containment",
            containment_threshold=config.containment_threshold,
            sample=config.containment_sample,
        ),
        "rarewords": lambda: RarewordsMethod(
            keys_per_doc=config.rarewords_keys,
            percentile=config.rarewords_percentile,
            max_words=config.rarewords_max_words,
            threshold=config.rarewords_threshold,
            warmup=config.rarewords_warmup,
        ),
        "anchors": lambda: anchors_method(config, anchors_model),
    }
    return {name: factories[name]() for name in config.method_names}


def simhash_idf_table(config: NearDupConfig, table: IdfTable | None = None) -> IdfTable:
    """The frozen DF table of simhash idf weighting: `table`, else config.simhash_idf_model;
    refused when fitted with other text rules or another hash (its words would never match)."""
    if table is None:
        if not config.simhash_idf_model:
            raise ConfigError(
                "simhash idf weighting needs a frozen DF table: set NEARDUP_SIMHASH_IDF_MODEL "
                "(or --simhash-idf-model) to a file made by `neardup idf fit` (weights that "
                "followed the index's growing DF would break comparisons with stored fingerprints)"
            )
        table = IdfTable.load(config.simhash_idf_model)
    normalizer = Normalizer(config.language, remove_stopwords=config.remove_stopwords,
                            stem=config.stem, max_token_chars=config.max_token_chars)
    try:
        table.check(normalizer.params(), ShingleHasher(config.hash).params())
    except IdfTableError as exc:
        raise ConfigError(str(exc)) from exc
    return table
