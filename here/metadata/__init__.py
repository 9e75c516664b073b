"""The instance metadata service both ways of running a cluster here use (here.local, here.boot): the files it
serves from (state), each cloud's tree (trees) and the HTTP server (service), answering by the cloud's profile."""
