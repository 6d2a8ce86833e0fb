"""Each lesson's own support code (its experiments, measurements and demos), one module per lesson."""
