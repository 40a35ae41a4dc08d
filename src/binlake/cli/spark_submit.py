"""Entry point for spark-submit, which runs a file rather than a module:

    spark-submit --master spark://host:7077 "$(python -c 'import binlake.cli.spark_submit as m; print(m.__file__)')" \
        /shared/binlogs/ --out /shared/lake/

The arguments are those of `binlake pipeline`; the session is the one spark-submit prepared.
"""

import sys

from binlake.cli.dispatch import main

if __name__ == "__main__":
    sys.exit(main(["pipeline", *sys.argv[1:]]))
