# NN: your HDFS, e.g. hdfs://namenode:8020 (`make hdfs` starts one here and prints its URL)
python python/mnist/prepare.py "$MNIST" "$NN/mnist"      # 8,000 images to train, 2,000 held out
spark-submit --master 'local-cluster[2,1,1024]' python/mnist/keras_spark.py \
    "$NN/mnist/train" "$NN/mnist/eval" "$NN/models/spark.keras"
# ... [worker:0] accuracy 0.95 (loss 0.16) on the held-out images; model: hdfs://.../spark.keras
