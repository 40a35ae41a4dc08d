"""Layer 5: the lake's tables committed — Delta commits made durable,
compaction and vacuum, and the lake engine that stages each run's tables
by the rules and commits them. Imports the layers below it only."""
