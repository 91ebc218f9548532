"""UI plumbing shared by the pages: settings <-> widgets <-> link, and figure builders. No tensor math here."""
