# MNIST: where MNIST's four IDX files are (a local directory, hdfs://, s3://, or an http(s) base URL)
tfrecord-io mnist "$MNIST" mnist-tfr --shards 4    # -> mnist-tfr/test/ (and train/)
tfrecord-io count mnist-tfr                        # records per shard, and the total
tfrecord-io head -n 1 mnist-tfr                    # the first Example, as a JSON line
tfrecord-io schema mnist-tfr                       # its feature spec and Spark schema
tfrecord-io verify mnist-tfr                       # every CRC checked: exit status 0
