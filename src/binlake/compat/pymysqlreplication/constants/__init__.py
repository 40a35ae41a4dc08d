"""python-mysql-replication's constants: BINLOG (event type codes), FIELD_TYPE,
STATUS_VAR_KEY, NONE_SOURCE and CHARSET, by the names it uses (the server's)."""
from .BINLOG import *  # noqa: F401,F403
from .FIELD_TYPE import *  # noqa: F401,F403
from .STATUS_VAR_KEY import *  # noqa: F401,F403
