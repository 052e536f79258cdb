"""``fabricsim describe``: placeholder until the topology layer lands."""


def register(app) -> None:  # noqa: ANN001
    @app.command()
    def describe(topology: str) -> None:
        """Summarize a topology file."""
        raise NotImplementedError
