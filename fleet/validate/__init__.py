"""`fleet plan --validate`: a preview's resources checked offline by their cloud's own provider code, where the
cloud's profile names a validator (`CloudProfile.validator`)."""
