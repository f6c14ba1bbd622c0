"""`neardup batch`: near-duplicate detection of a whole collection on Spark (docs/batch.md).

Stages, one module each, in the order a job runs them: read (documents in), fingerprint (the
crawl's Fingerprinter in the executors), candidates (pairs sharing a lookup key, bounded
buckets), verify (the methods' own compare), components (large-star / small-star), canonical
(the crawl's rule), write (the `dedup` output format, or marks on an Elasticsearch index);
resume keeps each stage's output so a killed job goes on from the last completed one. Only
this folder and the batch command import pyspark."""
