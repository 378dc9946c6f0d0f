import tensorflow as tf

from tfrecord_io import tf as tfr

url = "hdfs://namenode:8020/data/mnist/test"  # `tfrecord-io mnist`'s shards, on HDFS
records = tfr.dataset(url)  # every part-* shard, read by TensorFlow's own reader
examples = tfr.parse_examples(records, batch_size=256)  # feature spec inferred from the records
pairs = examples.map(lambda f: (tf.cast(f["image"], tf.float32) / 255.0, f["label"]))

model = tf.keras.Sequential([tf.keras.Input(shape=(784,)), tf.keras.layers.Dense(10)])
model.compile(
    optimizer="adam",
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
history = model.fit(pairs, epochs=2, verbose=2)

share = tfr.dataset(url, num_shards=2, shard_index=0)  # worker 0 of 2: each record read once
